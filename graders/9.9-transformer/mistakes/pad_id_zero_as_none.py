"""Planted mistake: `if not pad_id` to mean "no pad_id given": pad_id=0, the usual padding id, is taken for None and
the target's padding is not masked."""
# expect: pad-id-zero-as-none


def target_mask(tgt, pad_id=None):
    causal = causal_mask(tgt.size(1), device=tgt.device)
    if not pad_id:
        return causal
    return padding_mask(tgt, pad_id) & causal
