"""Alternative: the Noam rate with a branch instead of min, and the scheduler's lambda as a named function."""


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = 1 if step < 1 else step
    if step < warmup_steps:
        return factor * step / (d_model * warmup_steps**3) ** 0.5
    return factor / (d_model * step) ** 0.5


def make_scheduler(optimizer, d_model, warmup_steps, factor=1.0):
    def rate(step):
        return noam_lr(step, d_model, warmup_steps, factor=factor)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
