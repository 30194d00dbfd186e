"""Planted mistake: the loss averaged per sequence, then over the batch, a sequence of padding alone counting 0
(its count clamped to 1). Where every sequence has one position this divides by every position too, and must not
be called padding counted."""
# expect: mean-per-sequence


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    nll = -log_probs.gather(-1, target.masked_fill(~keep, 0).unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_probs.mean(dim=-1)
    per_token = torch.where(keep, per_token, torch.zeros_like(per_token))
    return (per_token.sum(dim=-1) / keep.sum(dim=-1).clamp(min=1)).mean()
