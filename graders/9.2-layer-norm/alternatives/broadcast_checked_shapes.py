"""Alternative: gamma and beta checked against x with torch.broadcast_shapes first (sympy, imported on first use)."""


def layer_norm(x, gamma, beta, eps=1e-5):
    if torch.broadcast_shapes(x.shape, gamma.shape, beta.shape) != x.shape:
        raise ValueError(f"gamma {tuple(gamma.shape)} and beta {tuple(beta.shape)} do not fit x {tuple(x.shape)}")
    centred = x - x.mean(dim=-1, keepdim=True)
    var = centred.square().mean(dim=-1, keepdim=True)
    return gamma * centred / torch.sqrt(var + eps) + beta
