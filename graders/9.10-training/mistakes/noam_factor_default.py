"""Planted mistake: noam_lr's factor defaults to 2 (the contract's default is factor=1.0)."""
# expect: wrong-default

_noam_lr = noam_lr


def noam_lr(step, d_model, warmup_steps, factor=2.0):
    return _noam_lr(step, d_model, warmup_steps, factor)
