"""Planted mistake: e^x written with Python's ^, which is exclusive or, not a power."""
# expect: bit-operator-on-floats
import math


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    e = math.e ^ (x - m)
    return e / e.sum(dim=dim, keepdim=True)
