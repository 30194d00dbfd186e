"""Planted mistake: the Annotated Transformer's buffer, pe.unsqueeze(0) of shape (1, max_len, d_model); the
contract's is (max_len, d_model). The output is right."""
# expect: pe-has-batch-dimension


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model).unsqueeze(0))

    def forward(self, x):
        if x.size(1) > self.pe.size(1):
            raise ValueError(f"sequence of length {x.size(1)} is longer than max_len={self.pe.size(1)}")
        return self.dropout(x + self.pe[:, : x.size(1)])
