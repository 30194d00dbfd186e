"""Planted mistake: the next token is taken with .item() from the first sequence, for the whole batch."""
# expect: greedy-batch


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        while ys.size(1) < max_len:
            out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            token = model.generator(out[:, -1]).argmax(dim=-1)[0].item()
            ys = torch.cat([ys, torch.full_like(ys[:, :1], token)], dim=1)
            if token == eos_id:
                break
    return ys
