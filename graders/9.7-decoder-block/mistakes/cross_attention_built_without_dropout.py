"""Planted mistake: the cross-attention is built as MultiHeadAttention(d_model, n_heads), without the block's dropout,
so its attention weights are never dropped in training."""
# expect: sublayer-dropout-missing


class DecoderBlock(DecoderBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.cross_attn = MultiHeadAttention(d_model, n_heads)
