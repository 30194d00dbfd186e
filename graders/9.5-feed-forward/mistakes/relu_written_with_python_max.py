"""Planted mistake: the paper's max(0, x W_1 + b_1) written with Python's max, which compares whole tensors."""
# expect: tensor-as-truth-value


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(max(0, self.linear_1(x))))
