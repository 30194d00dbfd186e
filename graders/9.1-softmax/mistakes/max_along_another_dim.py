"""Planted mistake: the sum along `dim`, but the maximum along another dimension."""
# expect: max-wrong-dim


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=0 if dim % x.dim() else -1, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
