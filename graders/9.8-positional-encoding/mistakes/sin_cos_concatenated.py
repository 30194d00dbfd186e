"""Planted mistake: the sines in the first half of the dimensions, the cosines in the second (torch.cat)."""
# expect: sin-cos-concatenated


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    return torch.cat([torch.sin(position * div_term), torch.cos(position * div_term)], dim=-1)
