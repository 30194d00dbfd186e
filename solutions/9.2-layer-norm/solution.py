"""Kata 9.2: Layer normalisation (SCAFFOLD: being written)."""


def _scaffold():
    ### BEGIN SOLUTION
    pass
    ### END SOLUTION
