"""Planted mistake: dropout's p read as the probability of keeping a unit (TensorFlow 1's keep_prob)."""
# expect: dropout-keep-probability


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.dropout = nn.Dropout(1.0 - dropout)
