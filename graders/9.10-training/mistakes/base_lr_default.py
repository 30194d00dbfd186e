"""Planted mistake: the optimiser keeps Adam's default lr (1e-3), so the schedule scales 1e-3, not 1.0."""
# expect: base-lr


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
