"""Alternative: masks from ne/unsqueeze and index comparisons, combined with logical_and."""


def padding_mask(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)  # (batch, 1, 1, len)


def target_mask(tgt, pad_id=None):
    pos = torch.arange(tgt.shape[1], device=tgt.device)
    causal = pos.unsqueeze(0) <= pos.unsqueeze(1)  # (tgt_len, tgt_len): key j <= query i
    if pad_id is None:
        return causal
    return torch.logical_and(padding_mask(tgt, pad_id), causal)  # (batch, 1, tgt_len, tgt_len)
