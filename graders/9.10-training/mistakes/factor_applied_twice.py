"""Planted mistake: the factor multiplies the rate twice (factor ** 2 in effect)."""
# expect: fault-in-constant


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    rate = factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
    return factor * rate
