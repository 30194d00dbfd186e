"""Planted mistake: decoding stops at `if next_token == eos_id`, a question about the whole batch at once."""
# expect: tensor-as-truth-value


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        while ys.size(1) < max_len:
            tgt_mask = causal_mask(ys.size(1), device=src.device)
            out = model.decode(ys, memory, src_mask, tgt_mask)
            next_token = model.generator(out[:, -1]).argmax(dim=-1)
            ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)
            if next_token == eos_id:
                break
    return ys
