"""Planted mistake: dropout applied to the block's output instead of the hidden units."""
# expect: dropout-misplaced


class FeedForward(FeedForward):
    def forward(self, x):
        return self.dropout(self.linear_2(torch.relu(self.linear_1(x))))
