"""Planted mistake: a dropout mask drawn once and kept for every later call of the same shape: the same hidden
units are dropped for every batch."""
# expect: dropout-mask-reused


class FeedForward(FeedForward):
    def forward(self, x):
        hidden = torch.relu(self.linear_1(x))
        if self.training and self.dropout.p > 0:
            if getattr(self, "mask", None) is None or self.mask.shape != hidden.shape:
                self.mask = torch.bernoulli(torch.full_like(hidden, 1 - self.dropout.p)) / (1 - self.dropout.p)
            hidden = hidden * self.mask
        return self.linear_2(hidden)
