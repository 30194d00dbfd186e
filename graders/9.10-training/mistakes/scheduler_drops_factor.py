"""Planted mistake: make_scheduler does not pass the factor on to noam_lr."""
# expect: schedule-factor


def make_scheduler(optimizer, d_model, warmup_steps, factor=1.0):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: noam_lr(step, d_model, warmup_steps))
