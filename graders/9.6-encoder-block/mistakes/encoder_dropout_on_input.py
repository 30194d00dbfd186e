"""Planted mistake: the Encoder applies dropout to its input before the blocks (the embedding's dropout belongs to
the model, not to the stack): seen in train mode only."""
# expect: fault-in-wiring

class Encoder(Encoder):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(n_layers, d_model, n_heads, d_ff, dropout, norm_first)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        x = self.dropout(x)
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
