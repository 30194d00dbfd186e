"""Planted mistake: the padding mask is True at the padding."""
# expect: padding-mask-inverted


def padding_mask(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]
