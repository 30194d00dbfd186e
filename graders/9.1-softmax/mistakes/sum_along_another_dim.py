"""Planted mistake: the maximum along `dim`, but the sum along another dimension."""
# expect: wrong-normaliser


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=0 if dim % x.dim() else -1, keepdim=True)
