"""Planted mistake: the warm-up ramp starts at 0, (step - 1) * warmup_steps^-1.5; the decay is right."""
# expect: fault-in-warmup


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, (step - 1) * warmup_steps ** -1.5)
