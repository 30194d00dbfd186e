"""Alternative: F.dropout(training=self.training) over narrow(), and F.embedding scaled by d_model ** 0.5."""
import torch.nn.functional as F


class PositionalEncoding(PositionalEncoding):
    def forward(self, x):
        if x.shape[1] > self.max_len:
            raise ValueError(f"seq {x.shape[1]} > max_len {self.max_len}")
        return F.dropout(x + self.pe.narrow(0, 0, x.shape[1]), self.dropout.p, training=self.training)


class TokenEmbedding(TokenEmbedding):
    def forward(self, tokens):
        return F.embedding(tokens, self.embedding.weight) * self.d_model**0.5
