"""Planted mistake: ** -1/2, which Python reads as (x ** -1) / 2."""
# expect: schedule-precedence


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model ** -1/2 * min(step ** -1/2, step * warmup_steps ** -3/2)
