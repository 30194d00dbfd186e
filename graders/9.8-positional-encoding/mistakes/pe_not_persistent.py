"""Planted mistake: the table is registered with persistent=False (to keep checkpoints small)."""
# expect: pe-not-in-state-dict


class PositionalEncoding(PositionalEncoding):
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__(d_model, max_len, dropout)
        table = self.pe
        del self.pe
        self.register_buffer("pe", table, persistent=False)
