"""Planted mistake: forward makes tgt_mask causal itself (the causal mask when None, ANDed in otherwise), where the
contract has the caller form it complete and the model pass it on as given."""
# expect: causal-mask-added-inside


class Transformer(Transformer):
    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        causal = causal_mask(tgt.size(1), device=tgt.device)
        tgt_mask = causal if tgt_mask is None else tgt_mask & causal
        return super().forward(src, tgt, src_mask, tgt_mask)
