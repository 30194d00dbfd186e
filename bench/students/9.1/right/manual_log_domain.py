"""Works in log space by hand: log p = (x - max) - log(sum(exp(x - max))), then returns exp(log p)."""

import torch


def _shift_and_log_norm(x, dim):
    # shift first, so that equal logits give exactly 0 and large logits lose no precision
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    log_norm = torch.log(torch.sum(torch.exp(shifted), dim=dim, keepdim=True))
    return shifted, log_norm


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of `x` along `dim` (negative dims count from the end).

    Args:
        x:   any shape, floating point, e.g. (batch, q_len, k_len) attention scores.
        dim: the dimension whose entries become a probability distribution.

    Returns:
        A tensor of x's shape, dtype and device whose slices along `dim` sum to 1.
    """
    shifted, log_norm = _shift_and_log_norm(x, dim)
    log_probs = shifted - log_norm
    return log_probs.exp()
