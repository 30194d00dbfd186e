"""Planted mistake: call torch's softmax through a name built at run time."""
# expect: forbidden


def softmax(x, dim=-1):
    return getattr(torch, "soft" + "max")(x, dim)
