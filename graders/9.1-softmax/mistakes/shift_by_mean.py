"""Planted mistake: each slice shifted by its mean, not its maximum (right for small logits only)."""
# expect: shift-by-mean


def softmax(x, dim=-1):
    e = torch.exp(x - x.mean(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
