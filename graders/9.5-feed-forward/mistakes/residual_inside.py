"""Planted mistake: the block adds its own residual (x + FFN(x)); the trace shows both layers got the right
inputs, so the fault is after linear_2."""
# expect: fault-in-ffn-output


class FeedForward(FeedForward):
    def forward(self, x):
        return x + self.linear_2(self.dropout(torch.relu(self.linear_1(x))))
