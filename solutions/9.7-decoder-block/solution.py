"""Kata 9.7: Causal mask, decoder block and the N-layer decoder (SCAFFOLD: being written)."""


def _scaffold():
    ### BEGIN SOLUTION
    pass
    ### END SOLUTION
