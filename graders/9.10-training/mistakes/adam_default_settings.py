"""Planted mistake: Adam with torch's default betas (0.9, 0.999) and eps 1e-8."""
# expect: adam-settings


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=1.0)
