"""Alternative: the base as a named constant, frequencies by torch.pow, angles by an outer product, the scale
as d_model ** 0.5, a debugging print."""

BASE = 10000.0


def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 == 1:
        raise ValueError("d_model must be even")
    print(f"building a {max_len} x {d_model} table")
    frequencies = torch.pow(torch.tensor(BASE, dtype=torch.float64),
                            -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = torch.outer(torch.arange(max_len, dtype=torch.float64), frequencies)
    return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(max_len, d_model).float()


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return self.embedding(tokens) * self.d_model ** 0.5
