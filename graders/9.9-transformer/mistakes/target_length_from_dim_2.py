"""Planted mistake: the target's length read as tgt.size(2), a dimension (batch, len) tokens do not have."""
# expect: dimension-out-of-range


def target_mask(tgt, pad_id=None):
    causal = causal_mask(tgt.size(2), device=tgt.device)
    if pad_id is None:
        return causal
    return padding_mask(tgt, pad_id) & causal
