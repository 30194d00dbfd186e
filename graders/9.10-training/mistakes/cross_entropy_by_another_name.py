"""Planted mistake: call torch's cross-entropy through a name built at run time."""
# expect: forbidden


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    loss_fn = getattr(torch.nn.functional, "cross" + "_entropy")
    k = logits.size(-1)
    return loss_fn(logits.reshape(-1, k), target.reshape(-1), label_smoothing=smoothing,
                   ignore_index=-100 if ignore_index is None else ignore_index)
