"""Planted mistake: sine or cosine chosen by `if i % 2 == 0` over a whole tensor of dimensions."""
# expect: tensor-as-truth-value


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model)
    angle = position / 10000.0 ** (2 * (i // 2) / d_model)
    pe = torch.sin(angle) if i % 2 == 0 else torch.cos(angle)
    return pe.to(torch.get_default_dtype())
