"""Planted mistake: the decay written relative to the peak, (step / warmup_steps)^-0.5, without the peak's own
warmup_steps^-0.5; the ramp is right."""
# expect: fault-in-decay


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model ** -0.5 * min((step / warmup_steps) ** -0.5, step * warmup_steps ** -1.5)
