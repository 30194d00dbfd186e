"""Planted mistake: Xavier's bound sqrt(6 / (fan_in + fan_out)) written with ^ 0.5 (exclusive or)."""
# expect: bit-operator-on-floats


class Transformer(Transformer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.parameters():
            if p.dim() > 1:
                bound = (6 / (p.size(0) + p.size(1))) ^ 0.5
                nn.init.uniform_(p, -bound, bound)
