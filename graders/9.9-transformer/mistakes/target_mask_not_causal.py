"""Planted mistake: the target mask hides the target's padding but not the future."""
# expect: tgt-mask-not-causal


def target_mask(tgt, pad_id=None):
    if pad_id is None:
        return torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device)
    return padding_mask(tgt, pad_id)
