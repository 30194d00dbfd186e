"""Planted mistake: the Annotated Transformer's target: e spread over K - 2 classes (not the true one, not padding)."""
# expect: smoothing-wrong-classes
# also: fault-in-smoothing


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    k = logits.size(-1)
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    safe = target.masked_fill(~keep, 0)
    q = torch.full_like(log_probs, smoothing / (k - 2))
    if ignore_index is not None and 0 <= ignore_index < k:
        q[..., ignore_index] = 0
    q.scatter_(-1, safe.unsqueeze(-1), 1 - smoothing)
    per_token = -(q * log_probs).sum(-1)
    return torch.where(keep, per_token, torch.zeros_like(per_token)).sum() / keep.sum()
