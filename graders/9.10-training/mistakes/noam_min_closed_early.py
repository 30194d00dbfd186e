"""Planted mistake: min( closed too early, min(step^-0.5, step) * warmup_steps^-1.5."""
# expect: schedule-precedence


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step) * warmup_steps ** -1.5
