"""Planted mistake: the d_model^-0.5 factor is left out of the schedule."""
# expect: d-model-factor


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * min(step ** -0.5, step * warmup_steps ** -1.5)
