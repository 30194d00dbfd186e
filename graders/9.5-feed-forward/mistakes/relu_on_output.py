"""Planted mistake: the ReLU is applied to the output of linear_2 instead of the hidden units."""
# expect: activation-misplaced


class FeedForward(FeedForward):
    def forward(self, x):
        return torch.relu(self.linear_2(self.dropout(self.linear_1(x))))
