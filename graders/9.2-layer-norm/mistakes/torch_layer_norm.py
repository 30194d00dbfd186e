"""Planted mistake: call torch's layer norm instead of writing it."""
# expect: forbidden


def layer_norm(x, gamma, beta, eps=1e-5):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)
