"""Planted mistake: noam_lr forgets the factor."""
# expect: schedule-factor


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
