"""Planted mistake: shift the input in place, changing the caller's tensor."""
# expect: modifies-input


def softmax(x, dim=-1):
    x -= x.amax(dim=dim, keepdim=True)
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)
