"""Planted mistake: Xavier initialisation of every parameter, biases and the norms' gamma and beta too."""
# expect: xavier-on-vectors


class Transformer(Transformer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.parameters():
            nn.init.xavier_uniform_(p)
