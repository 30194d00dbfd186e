"""Planted mistake: both layers built with bias=False (FFN(x) = max(0, x W_1) W_2, the paper's biases dropped)."""
# expect: bias-missing


class FeedForward(FeedForward):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__(d_model, d_ff, dropout)
        self.linear_1 = nn.Linear(d_model, d_ff, bias=False)
        self.linear_2 = nn.Linear(d_ff, d_model, bias=False)
