"""Alternative: the d_ff-wide hidden layer is recomputed in backward, not stored (torch.utils.checkpoint)."""
from torch.utils.checkpoint import checkpoint


class FeedForward(FeedForward):
    def hidden(self, x):
        return self.dropout(torch.relu(self.linear_1(x)))  # (..., d_ff)

    def forward(self, x):
        # Backward runs hidden() again, with the random state of the first run: the same dropout mask.
        return self.linear_2(checkpoint(self.hidden, x, use_reentrant=False))
