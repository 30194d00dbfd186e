"""Planted mistake: the padding mask is made a float tensor (1.0 at real tokens), as for an additive mask."""
# expect: mask-not-bool


def padding_mask(tokens, pad_id):
    return (tokens != pad_id).float()[:, None, None, :]
