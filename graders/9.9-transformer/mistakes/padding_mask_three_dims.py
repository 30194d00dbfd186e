"""Planted mistake: padding_mask is (batch, 1, len), one unsqueeze short of (batch, 1, 1, len)."""
# expect: padding-mask-shape


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1)
