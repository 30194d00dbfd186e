"""Kata 9.6: Encoder block and the N-layer encoder (SCAFFOLD: being written)."""


def _scaffold():
    ### BEGIN SOLUTION
    pass
    ### END SOLUTION
