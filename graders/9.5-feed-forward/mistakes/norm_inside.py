"""Planted mistake: the block normalises its input before linear_1 (a pre-norm moved inside the feed-forward);
no classic mistake models it, the trace shows linear_1 did not receive x."""
# expect: fault-in-ffn-input
import torch.nn.functional as F


class FeedForward(FeedForward):
    def forward(self, x):
        return self.linear_2(self.dropout(torch.relu(self.linear_1(F.layer_norm(x, x.shape[-1:])))))
