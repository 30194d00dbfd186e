"""Kata 9.4: Multi-head attention (SCAFFOLD: being written)."""


def _scaffold():
    ### BEGIN SOLUTION
    pass
    ### END SOLUTION
