"""Planted mistake: the Noam schedule takes the max of its two branches instead of the min."""
# expect: schedule-max-not-min


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)
