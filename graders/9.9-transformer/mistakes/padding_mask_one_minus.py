"""Planted mistake: the real tokens as 1 - (tokens == pad_id): arithmetic torch refuses on a bool tensor."""
# expect: arithmetic-on-bool-mask


def padding_mask(tokens, pad_id):
    return (1 - (tokens == pad_id))[:, None, None, :]
