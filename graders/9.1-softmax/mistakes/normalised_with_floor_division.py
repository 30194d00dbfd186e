"""Planted mistake: the exponentials divided by their sum with //, floor division (no gradient, and floored)."""
# expect: floor-division-in-backward
# also: fault-in-normalisation


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e // e.sum(dim=dim, keepdim=True)
