"""Planted mistake: the sum loses its dimension and broadcasts against the wrong axis."""
# expect: wrong-normaliser


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim)
