"""Planted mistake: ReLU written as `h & (h > 0)`, a bit operator, for h * (h > 0)."""
# expect: bit-operator-on-floats


class FeedForward(FeedForward):
    def forward(self, x):
        h = self.linear_1(x)
        return self.linear_2(self.dropout(h & (h > 0)))
