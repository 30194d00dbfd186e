"""Planted mistake: the real tokens found with `tokens is not pad_id`, an identity test, not a comparison."""
# expect: compared-by-identity


def padding_mask(tokens, pad_id):
    return (tokens is not pad_id)[:, None, None, :]
