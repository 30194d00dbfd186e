"""Alternative: linear_1 and linear_2 kept as attributes and run through an nn.Sequential that holds the same
modules (so state_dict names each layer twice)."""


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.linear_1, nn.ReLU(), nn.Dropout(dropout), self.linear_2)

    def forward(self, x):
        return self.net(x)
