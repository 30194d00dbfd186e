"""Planted mistake: padding_mask assumes the padding id is 0 and ignores pad_id."""
# expect: pad-id-ignored


def padding_mask(tokens, pad_id):
    return (tokens != 0)[:, None, None, :]
