"""Planted mistake: exponentiate the raw logits (overflows to inf, then NaN)."""
# expect: no-max-subtraction


def softmax(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)
