"""Planted mistake: the denominator summed under torch.no_grad(): right values, a gradient without the sum's part."""
# expect: normaliser-detached


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    with torch.no_grad():
        total = e.sum(dim=dim, keepdim=True)
    return e / total
