"""Planted mistake: dropout written by hand, a random mask with no 1 / (1 - p) rescaling."""
# expect: dropout-not-rescaled


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.p = dropout

    def forward(self, x):
        hidden = torch.relu(self.linear_1(x))
        if self.training:
            hidden = hidden * (torch.rand_like(hidden) >= self.p)  # kept units should be divided by 1 - p
        return self.linear_2(hidden)
