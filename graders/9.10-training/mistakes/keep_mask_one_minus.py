"""Planted mistake: the tokens that count as 1 - (target == ignore_index): arithmetic torch refuses on bools."""
# expect: arithmetic-on-bool-mask


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else 1 - (target == ignore_index)
    safe_target = target.masked_fill(~keep, 0)
    nll = -log_probs.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)
    per_token = (1.0 - smoothing) * nll + smoothing * -log_probs.mean(dim=-1)
    per_token = torch.where(keep, per_token, torch.zeros_like(per_token))
    return per_token.sum() / keep.sum()
