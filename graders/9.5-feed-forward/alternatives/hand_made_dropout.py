"""Alternative: ReLU as clamp_min(0), dropout written by hand as a kept-mask scaled by 1 / (1 - p)."""


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.p = dropout

    def forward(self, x):
        hidden = self.linear_1(x).clamp_min(0)
        if self.training and self.p > 0:
            keep = torch.rand_like(hidden) >= self.p
            hidden = hidden * keep / (1 - self.p)
        return self.linear_2(hidden)
