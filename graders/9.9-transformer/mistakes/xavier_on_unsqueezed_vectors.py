"""Planted mistake: Xavier initialisation of the vectors too (biases and the norms' gamma and beta), each
unsqueezed to a one-row matrix so that xavier_uniform_ accepts it."""
# expect: norms-reinitialised


class Transformer(Transformer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.parameters():
            if p.dim() == 1:
                nn.init.xavier_uniform_(p.data.unsqueeze(0))
