"""Planted mistake: the shifted exponentials are returned without dividing by their sum."""
# expect: fault-in-normalisation


def softmax(x, dim=-1):
    return torch.exp(x - x.amax(dim=dim, keepdim=True))
