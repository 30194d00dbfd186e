"""Alternative: the table filled one sin/cos pair of columns at a time, in float64, then cast."""


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 == 1:
        raise ValueError(f"odd d_model: {d_model}")
    pos = torch.arange(max_len, dtype=torch.float64)
    columns = []
    for two_i in range(0, d_model, 2):
        angle = pos / 10000 ** (two_i / d_model)
        columns += [torch.sin(angle), torch.cos(angle)]
    return torch.stack(columns, dim=1).to(torch.get_default_dtype()) if columns else torch.zeros(max_len, 0)
