"""Alternative: move `dim` to the end, normalise the last dimension without keepdim, move it back."""


def softmax(x, dim=-1):
    last = x.movedim(dim, -1)
    e = torch.exp(last - last.amax(-1)[..., None])
    return (e / e.sum(-1)[..., None]).movedim(-1, dim)
