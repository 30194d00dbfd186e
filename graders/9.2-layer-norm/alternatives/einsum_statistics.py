"""Alternative: the statistics as einsum contractions with a 1/d vector."""


def layer_norm(x, gamma, beta, eps=1e-5):
    avg = torch.full((x.shape[-1],), 1.0 / x.shape[-1], dtype=x.dtype, device=x.device)
    centred = x - torch.einsum("...d,d->...", x, avg).unsqueeze(-1)
    var = torch.einsum("...d,...d,d->...", centred, centred, avg).unsqueeze(-1)
    return gamma * centred.div(torch.sqrt(var.add(eps))) + beta
