"""Alternative: positions flattened to (N, K), the real tokens selected first, the mean over them."""


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    flat_logits = logits.reshape(-1, logits.size(-1))  # (N, K)
    flat_target = target.reshape(-1)  # (N,)
    if ignore_index is not None:
        real = flat_target != ignore_index
        flat_logits, flat_target = flat_logits[real], flat_target[real]
    log_probs = flat_logits.log_softmax(-1)
    nll = -log_probs[torch.arange(flat_target.numel(), device=logits.device), flat_target]
    return ((1 - smoothing) * nll - smoothing * log_probs.mean(-1)).mean()
