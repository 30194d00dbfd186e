"""Planted mistake: the softmax computed in NumPy and turned back into a tensor: right values, no graph behind them."""
# expect: graph-cut
import numpy as np


def softmax(x, dim=-1):
    a = x.detach().cpu().numpy()
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return torch.from_numpy(e / e.sum(axis=dim, keepdims=True)).to(x.device)
