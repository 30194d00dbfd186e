"""Planted mistake: the frequencies spaced linearly, w_i = 1 - 2i / d_model, not geometrically. With two pairs
(d_model = 4) any second frequency is some base's (here 4): wrong-base is true of that table."""
# expect: fault-in-frequencies
# also: wrong-base


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    angle = position * (1 - torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(torch.get_default_dtype())
