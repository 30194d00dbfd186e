"""Planted mistake: the causal part built with triu: each position sees the future, not the past."""
# expect: causal-mask-transposed
# also: tgt-mask-not-causal


def target_mask(tgt, pad_id=None):
    size = tgt.size(1)
    causal = torch.ones(size, size, dtype=torch.bool, device=tgt.device).triu()
    if pad_id is None:
        return causal
    return padding_mask(tgt, pad_id) & causal
