"""Planted mistake: forward returns log-probabilities, as the Annotated Transformer's Generator does."""
# expect: log-softmax-output


class Transformer(Transformer):
    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encode(src, src_mask)
        return torch.log_softmax(self.generator(self.decode(tgt, memory, src_mask, tgt_mask)), dim=-1)
