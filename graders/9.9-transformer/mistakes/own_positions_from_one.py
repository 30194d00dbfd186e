"""Planted mistake: a PositionalEncoding of the student's own whose forward numbers the positions from 1."""
# expect: fault-in-positional-encoding


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        return self.dropout(x + self.pe[1 : x.size(1) + 1])  # position 1 for the first token
