"""Alternative: means written as sums divided by d_model; the affine step as torch.addcmul."""


def layer_norm(x, gamma, beta, eps=1e-5):
    d_model = x.shape[-1]
    centred = x - x.sum(-1, keepdim=True) / d_model
    std = ((centred * centred).sum(-1, keepdim=True) / d_model + eps).sqrt()
    return torch.addcmul(beta, gamma, centred / std)
