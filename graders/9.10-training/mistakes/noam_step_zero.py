"""Planted mistake: step 0 is not counted as step 1, so LambdaLR's first call divides by zero."""
# expect: step-zero


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
