"""Kata 9.4: Multi-head attention (SCAFFOLD: being written)."""


def _scaffold():
    # YOUR CODE HERE
    raise NotImplementedError()
