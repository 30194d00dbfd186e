"""Alternative: x_hat as sqrt(d) times the gradient of sqrt(sum((x - mean)**2) + d * eps), by torch.func.grad."""


def layer_norm(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]

    def spread(v):  # one sqrt(sum((v - mean)**2) + d * eps) per position, summed: each position's gradient is its own
        centred = v - v.mean(dim=-1, keepdim=True)
        return torch.sqrt(centred.pow(2).sum(dim=-1) + d * eps).sum()

    # d/dv sqrt(S + d·eps) = (v - mean) / sqrt(S + d·eps) = x_hat / sqrt(d), S being d times the variance
    x_hat = torch.func.grad(spread)(x) * d**0.5
    return gamma * x_hat + beta
