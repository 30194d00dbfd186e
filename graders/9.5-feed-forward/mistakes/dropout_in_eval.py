"""Planted mistake: F.dropout without training=self.training, so it also drops in eval mode."""
# expect: dropout-in-eval


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.p = dropout

    def forward(self, x):
        return self.linear_2(torch.nn.functional.dropout(torch.relu(self.linear_1(x)), self.p))
