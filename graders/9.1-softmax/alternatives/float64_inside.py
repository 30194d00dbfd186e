"""Alternative: compute in float64 whatever the input's dtype, return in the input's dtype."""


def softmax(x, dim=-1):
    wide = x.double()
    e = torch.exp(wide - wide.amax(dim=dim, keepdim=True))
    return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)
