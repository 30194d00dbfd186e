"""Planted mistake: train_step's smoothing defaults to 0 (the contract's default is smoothing=0.1)."""
# expect: wrong-default

_train_step = train_step


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.0, max_grad_norm=None):
    return _train_step(model, batch, optimizer, scheduler, pad_id, smoothing, max_grad_norm)
