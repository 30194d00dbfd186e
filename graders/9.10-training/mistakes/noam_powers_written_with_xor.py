"""Planted mistake: the schedule's powers written with ^ (exclusive or in Python), not **."""
# expect: bit-operator-on-floats


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model ^ -0.5 * min(step ^ -0.5, step * warmup_steps ^ -1.5)
