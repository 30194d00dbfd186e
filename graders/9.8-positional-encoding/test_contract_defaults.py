"""Graders of kata 9.8: the signature's defaults (course spec: `PositionalEncoding(d_model, max_len=5000,
dropout=0.1)`).

Hidden from students. The other checks pass every argument; this one leaves one out at a time and compares the
student's module with itself given the contract's value (kata.toolkit.defaults): the buffer `pe` holds 5000
positions, and dropout 0.1 acts in train mode.
"""

import torch

from kata.toolkit.defaults import check_module_defaults


def test_positional_encoding_defaults(student):
    """PositionalEncoding(d_model) has max_len 5000 (its pe buffer) and dropout 0.1 (the signature's defaults)"""
    x = torch.randn(2, 6, 8)  # (batch, seq, d_model)
    check_module_defaults(lambda **kw: student.PositionalEncoding(8, **kw), lambda pe: pe(x),
                          {"max_len": 5000, "dropout": 0.1}, base={"max_len": 16},
                          signature="PositionalEncoding(8)")
