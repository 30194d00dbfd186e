"""Planted mistake: dropout written in place on the ReLU's output (h *= mask), which relu's backward needed: right
forward, and backward() raises in train mode."""
# expect: in-place-breaks-backward


class FeedForward(FeedForward):
    def forward(self, x):
        hidden = torch.relu(self.linear_1(x))
        if self.training and self.dropout.p > 0:
            hidden *= (torch.rand_like(hidden) >= self.dropout.p).to(hidden.dtype) / (1 - self.dropout.p)
        return self.linear_2(hidden)
