"""Planted mistake: powers of 2 in place of exp, normalised along `dim` as they should be."""
# expect: fault-in-exponentials


def softmax(x, dim=-1):
    e = torch.exp2(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
