"""Planted mistake: dropout defaults to the paper's 0.1, not the contract's 0."""
# expect: wrong-default-dropout


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__(d_model, d_ff, dropout)
