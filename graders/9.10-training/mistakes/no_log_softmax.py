"""Planted mistake: the raw logits are used as log-probabilities (log-softmax missing)."""
# expect: no-log-softmax


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    safe = target.masked_fill(~keep, 0)
    nll = -logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll + smoothing * -logits.mean(-1)
    return torch.where(keep, per_token, torch.zeros_like(per_token)).sum() / keep.sum()
