"""Planted mistake: the KL divergence KL(q || p) instead of the cross-entropy (off by the entropy of q)."""
# expect: kl-divergence


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    k = logits.size(-1)
    log_probs = torch.log_softmax(logits, dim=-1)
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    safe = target.masked_fill(~keep, 0)
    one_hot = torch.zeros_like(log_probs).scatter_(-1, safe.unsqueeze(-1), 1.0)
    q = (1 - smoothing) * one_hot + smoothing / k
    per_token = (torch.xlogy(q, q) - q * log_probs).sum(-1)  # sum_c q_c (log q_c - log p_c)
    return torch.where(keep, per_token, torch.zeros_like(per_token)).sum() / keep.sum()
