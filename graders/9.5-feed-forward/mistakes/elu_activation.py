"""Planted mistake: ELU between the layers, an activation no classic mistake models; the trace shows linear_2
did not receive relu(linear_1(x))."""
# expect: fault-in-hidden-layer
import torch.nn.functional as F


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(F.elu(self.linear_1(x))))
