"""Alternative: statistics always computed in float64 (a helper), the result cast back to x's dtype, a print."""


def _standardise(x, eps):
    wide = x.double()
    centred = wide - wide.mean(dim=-1, keepdim=True)
    return centred / (centred.square().mean(dim=-1, keepdim=True) + eps).sqrt()


def layer_norm(x, gamma, beta, eps=1e-5):
    print("normalising", tuple(x.shape), x.dtype)
    return (gamma.double() * _standardise(x, eps) + beta.double()).to(x.dtype)
