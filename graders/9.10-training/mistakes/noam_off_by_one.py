"""Planted mistake: the scheduler adds one to LambdaLR's step "because it starts at 0"."""
# expect: schedule-off-by-one


def make_scheduler(optimizer, d_model, warmup_steps, factor=1.0):
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda=lambda step: noam_lr(step + 1, d_model, warmup_steps, factor))
