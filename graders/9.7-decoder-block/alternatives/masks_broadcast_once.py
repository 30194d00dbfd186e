"""Alternative: the Decoder expands both masks once to full size, by torch.broadcast_shapes."""


class Decoder(Decoder):
    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        batch, tgt_len, _ = x.shape
        src_len = memory.shape[1]
        if tgt_mask is not None:  # (T, T) or (batch, 1, T, T) -> (batch, 1, T, T), a view: nothing copied
            tgt_mask = tgt_mask.expand(torch.broadcast_shapes(tgt_mask.shape, (batch, 1, tgt_len, tgt_len)))
        if src_mask is not None:  # (batch, 1, 1, S) -> (batch, 1, T, S)
            src_mask = src_mask.expand(torch.broadcast_shapes(src_mask.shape, (batch, 1, tgt_len, src_len)))
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)
