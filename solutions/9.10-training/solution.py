"""Kata 9.10: Training: warm-up, label smoothing, greedy decoding, a copy task (SCAFFOLD: being written)."""


def _scaffold():
    ### BEGIN SOLUTION
    pass
    ### END SOLUTION
