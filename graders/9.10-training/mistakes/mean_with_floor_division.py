"""Planted mistake: the mean over the real tokens taken with //, floor division (no gradient, and floored)."""
# expect: floor-division-in-backward


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    nll = -log_probs.gather(-1, target.masked_fill(~keep, 0).unsqueeze(-1)).squeeze(-1)
    per_token = (1.0 - smoothing) * nll + smoothing * -log_probs.mean(dim=-1)
    return torch.where(keep, per_token, torch.zeros_like(per_token)).sum() // keep.sum()
