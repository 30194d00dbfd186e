"""Alternative: q scaled before the product, the softmax in float64 (a helper), -inf fill, rows of no key kept
at zero with where, a debugging print."""


def _weights(scores, mask):
    wide = scores.double()
    if mask is not None:
        wide = wide.masked_fill(~mask, -math.inf)
    peak = wide.amax(dim=-1, keepdim=True)
    peak = torch.where(torch.isinf(peak), torch.zeros_like(peak), peak)  # a row of only -inf: no NaN from inf - inf
    e = torch.exp(wide - peak)
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(1e-300), torch.zeros_like(e)).to(scores.dtype)


def scaled_dot_product_attention(q, k, v, mask=None):
    print("attention", tuple(q.shape), tuple(k.shape), None if mask is None else tuple(mask.shape))
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    weights = _weights(scores, mask)
    return weights @ v, weights
