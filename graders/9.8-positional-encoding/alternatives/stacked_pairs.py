"""Alternative: sin and cos stacked as pairs on a new last dimension, then flattened (interleaved)."""


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angle = torch.outer(torch.arange(max_len, dtype=torch.float64), torch.pow(10000.0, -2 * i / d_model))
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2).float()
