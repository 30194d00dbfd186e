"""Alternative: softmax as exp(x - logsumexp(x)), the log-domain normaliser."""


def softmax(x, dim=-1):
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
