"""Alternative: target_mask expands both masks to one shape by torch.broadcast_shapes (which imports sympy lazily)."""


def target_mask(tgt, pad_id=None):
    causal = causal_mask(tgt.size(1), device=tgt.device)  # (tgt_len, tgt_len)
    if pad_id is None:
        return causal
    padding = padding_mask(tgt, pad_id)  # (batch, 1, 1, tgt_len)
    shape = torch.broadcast_shapes(padding.shape, causal.shape)  # (batch, 1, tgt_len, tgt_len)
    return torch.logical_and(padding.expand(shape), causal.expand(shape))
