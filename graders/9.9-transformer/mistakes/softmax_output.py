"""Planted mistake: forward returns probabilities (a softmax of the logits), not the logits."""
# expect: softmax-output


class Transformer(Transformer):
    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encode(src, src_mask)
        return torch.softmax(self.generator(self.decode(tgt, memory, src_mask, tgt_mask)), dim=-1)
