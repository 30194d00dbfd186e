"""Kata 9.8: Sinusoidal positional encoding and scaled embeddings (SCAFFOLD: being written)."""


def _scaffold():
    # YOUR CODE HERE
    raise NotImplementedError()
