"""Planted mistake: the dropout argument is accepted but never applied."""
# expect: dropout-missing


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(torch.relu(self.linear_1(x)))
