"""Planted mistake: `if ... or tgt != pad_id:` asks Python about every token at once (meant: no token is padding)."""
# expect: tensor-as-truth-value


def target_mask(tgt, pad_id=None):
    causal = causal_mask(tgt.size(1), device=tgt.device)
    if pad_id is None or tgt != pad_id:
        return causal
    return padding_mask(tgt, pad_id) & causal
