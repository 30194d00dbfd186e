"""Planted mistake: no ReLU between the two linear layers (they collapse into one linear map)."""
# expect: activation-missing


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(self.linear_1(x)))
