"""Planted mistake: the cos columns derived from the sin ones as sqrt(1 - sin^2), which loses cos's sign."""
# expect: fault-in-cos-columns


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    angle = position * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.sqrt(1 - torch.sin(angle) ** 2)
    return pe.to(torch.get_default_dtype())
