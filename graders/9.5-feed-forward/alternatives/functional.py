"""Alternative: F.linear, F.relu and F.dropout(training=self.training), the probability kept as a float."""
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear_1 = nn.Linear(d_model, d_ff)
        self.linear_2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x):
        hidden = F.relu(F.linear(x, self.linear_1.weight, self.linear_1.bias))
        hidden = F.dropout(hidden, self.p, training=self.training)
        return F.linear(hidden, self.linear_2.weight, self.linear_2.bias)
