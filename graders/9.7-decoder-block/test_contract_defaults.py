"""Graders of kata 9.7: the signatures' defaults (course spec: `DecoderBlock(d_model, n_heads, d_ff, dropout=0.1,
norm_first=False)`, `Decoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, norm_first=False)`).

Hidden from students. The other checks pass every argument; these leave one out at a time and compare the
student's module with itself given the contract's value (kata.toolkit.defaults). The block's norm_first default
is checked with the block's other checks.
"""

import torch

from kata.toolkit.defaults import check_module_defaults


def inputs():
    """x (batch, tgt_len, d_model), memory (batch, src_len, d_model), the causal mask (tgt_len, tgt_len)."""
    x, memory = torch.randn(2, 4, 8), torch.randn(2, 5, 8)
    return x, memory, torch.ones(4, 4, dtype=torch.bool).tril()


def test_decoder_block_dropout_default(student):
    """DecoderBlock(d_model, n_heads, d_ff) has dropout 0.1 (the signature's default)"""
    x, memory, causal = inputs()
    check_module_defaults(lambda **kw: student.DecoderBlock(8, 2, 16, **kw),
                          lambda block: block(x, memory, tgt_mask=causal), {"dropout": 0.1},
                          signature="DecoderBlock(8, 2, 16)")


def test_decoder_defaults(student):
    """Decoder(n_layers, d_model, n_heads, d_ff) is post-norm (no final norm) with dropout 0.1"""
    x, memory, causal = inputs()
    check_module_defaults(lambda **kw: student.Decoder(2, 8, 2, 16, **kw),
                          lambda decoder: decoder(x, memory, tgt_mask=causal), {"dropout": 0.1, "norm_first": False},
                          signature="Decoder(2, 8, 2, 16)")
