"""Planted mistake: the target's term takes -log p of the predicted class (the max), not of the target."""
# expect: fault-in-target-term


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    nll = -log_probs.max(dim=-1).values
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    return torch.where(keep, per_token, torch.zeros_like(per_token)).sum() / keep.sum()
