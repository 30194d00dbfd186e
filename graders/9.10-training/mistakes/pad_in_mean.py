"""Planted mistake: the padding's losses are zeroed, but the mean divides by every position."""
# expect: pad-in-mean


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    safe = target.masked_fill(~keep, 0)
    nll = -log_probs.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll + smoothing * -log_probs.mean(-1)
    return (per_token * keep).mean()
