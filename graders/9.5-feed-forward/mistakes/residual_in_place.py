"""Planted mistake: the block adds its own residual, in place, into the caller's input (x += ...)."""
# expect: modifies-input
# also: fault-in-ffn-output


class FeedForward(FeedForward):
    def forward(self, x):
        x += self.linear_2(self.dropout(torch.relu(self.linear_1(x))))
        return x
