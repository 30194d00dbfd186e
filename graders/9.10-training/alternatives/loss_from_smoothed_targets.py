"""Alternative: the loss as -sum(q * log p) with the smoothed distribution q built explicitly, logsumexp by hand."""
import torch.nn.functional as F


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    k = logits.shape[-1]
    log_p = logits - torch.logsumexp(logits, dim=-1, keepdim=True)  # (..., K)
    keep = target != ignore_index if ignore_index is not None else torch.ones_like(target, dtype=torch.bool)
    q = (1 - smoothing) * F.one_hot(torch.where(keep, target, 0), k).to(logits.dtype) + smoothing / k
    per_token = -(q * log_p).sum(dim=-1)  # (...)
    return per_token[keep].sum() / keep.sum()
