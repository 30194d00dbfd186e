"""Planted mistake: the maximum of the whole tensor, not of each slice along `dim`."""
# expect: global-max


def softmax(x, dim=-1):
    e = torch.exp(x - x.max())
    return e / e.sum(dim=dim, keepdim=True)
