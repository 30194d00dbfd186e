"""Planted mistake: divide by the sum of every element instead of the sum along `dim`."""
# expect: wrong-normaliser


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum()
