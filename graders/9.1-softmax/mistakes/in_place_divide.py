"""Planted mistake: the exponentials divided in place, e /= sum: right values, but exp's backward needed e as it
was, so backward() raises."""
# expect: in-place-breaks-backward


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    e /= e.sum(dim=dim, keepdim=True)
    return e
