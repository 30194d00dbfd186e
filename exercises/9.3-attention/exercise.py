"""Kata 9.3: Scaled dot-product attention and one attention head (SCAFFOLD: being written)."""


def _scaffold():
    # YOUR CODE HERE
    raise NotImplementedError()
