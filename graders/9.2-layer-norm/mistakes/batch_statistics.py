"""Planted mistake: statistics over the batch dimension (that is batch norm), not over the features."""
# expect: wrong-axis


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=0, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=0, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta
