"""Planted mistake: make_scheduler's factor defaults to 2 (the contract's default is factor=1.0)."""
# expect: wrong-default

_make_scheduler = make_scheduler


def make_scheduler(optimizer, d_model, warmup_steps, factor=2.0):
    return _make_scheduler(optimizer, d_model, warmup_steps, factor)
