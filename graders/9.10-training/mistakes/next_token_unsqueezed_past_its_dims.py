"""Planted mistake: the next tokens made a column with unsqueeze(2), a dimension a (batch,) tensor does not have."""
# expect: dimension-out-of-range


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while ys.size(1) < max_len and not finished.all():
            out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            next_token = model.generator(out[:, -1]).argmax(dim=-1).masked_fill(finished, eos_id)
            ys = torch.cat([ys, next_token.unsqueeze(2)], dim=1)
            finished |= next_token == eos_id
    return ys
