"""Planted mistake: the Annotated Transformer's LayerNorm (unbiased std, eps 1e-6 outside the root)."""
# expect: eps-outside-root
# also: unbiased-variance fault-in-scale


def layer_norm(x, gamma, beta, eps=1e-6):
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)
    return gamma * (x - mean) / (std + eps) + beta
