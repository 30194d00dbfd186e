"""Kata 9.10: Training: warm-up, label smoothing, greedy decoding, a copy task (SCAFFOLD: being written)."""


def _scaffold():
    # YOUR CODE HERE
    raise NotImplementedError()
