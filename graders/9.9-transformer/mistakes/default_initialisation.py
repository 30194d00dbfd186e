"""Planted mistake: no Xavier initialisation (nn.Embedding's N(0, 1), nn.Linear's default)."""
# expect: not-xavier-init


class Transformer(Transformer):
    def __init__(self, *args, **kwargs):
        saved = nn.init.xavier_uniform_
        nn.init.xavier_uniform_ = lambda p, *a, **k: p
        try:
            super().__init__(*args, **kwargs)
        finally:
            nn.init.xavier_uniform_ = saved
