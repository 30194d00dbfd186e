"""Planted mistake: each dimension j gets the exponent j / d_model: a pair's sin and cos differ in frequency."""
# expect: exponent-per-dimension


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(d_model, dtype=torch.float64)
    angle = position / 10000.0 ** (j / d_model)  # (max_len, d_model): one frequency per dimension
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle[:, 0::2])
    pe[:, 1::2] = torch.cos(angle[:, 1::2])
    return pe.float()
