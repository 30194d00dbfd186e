"""Planted mistake: the frequency of pair i is 1 / 10000^(i / d_model), not 1 / 10000^(2i / d_model)."""
# expect: exponent-i-not-2i


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float32)
    angle = position / 10000.0 ** (i / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe
