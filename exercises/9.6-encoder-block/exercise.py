"""Kata 9.6: Encoder block and the N-layer encoder (SCAFFOLD: being written)."""


def _scaffold():
    # YOUR CODE HERE
    raise NotImplementedError()
