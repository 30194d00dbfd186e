"""Planted mistake: a guard asks Python whether a whole tensor is finite (`if not torch.isfinite(x)`)."""
# expect: tensor-as-truth-value


def softmax(x, dim=-1):
    if not torch.isfinite(x):
        raise ValueError("softmax needs finite inputs")
    m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)
