"""Planted mistake: the hidden layer has d_model units; d_ff is ignored."""
# expect: d-ff-ignored


class FeedForward(FeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.linear_1 = nn.Linear(d_model, d_model)
        self.linear_2 = nn.Linear(d_model, d_model)
