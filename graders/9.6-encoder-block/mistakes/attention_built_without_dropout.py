"""Planted mistake: the self-attention is built as MultiHeadAttention(d_model, n_heads), without the block's
dropout, so its attention weights are never dropped in training."""
# expect: sublayer-dropout-missing


class EncoderBlock(EncoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads)
