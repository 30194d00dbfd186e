"""Planted mistake: target_mask is only causal: the target's padding keys stay visible."""
# expect: tgt-padding-ignored


def target_mask(tgt, pad_id=None):
    return causal_mask(tgt.size(1), device=tgt.device)
