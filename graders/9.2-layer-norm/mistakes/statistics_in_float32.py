"""Planted mistake: the statistics of a float64 input computed in float32. No classic mistake is this one,
so the check fails with no diagnosis: where the models agree with the right output (one feature, or a shape
where keepdim does not matter), they must not be offered as its cause."""
# expect: failed


def layer_norm(x, gamma, beta, eps=1e-5):
    x32 = x.float()
    mean = x32.mean(dim=-1, keepdim=True)
    var = x32.var(dim=-1, unbiased=False, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
