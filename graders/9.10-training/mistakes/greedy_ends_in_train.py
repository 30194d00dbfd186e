"""Planted mistake: greedy_decode decodes in eval mode, then puts the model in train mode, whatever mode it had."""
# expect: greedy-changes-mode


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    memory = model.encode(src, src_mask)
    ys = src.new_full((src.shape[0], 1), bos_id)
    for _ in range(max_len - 1):
        h = model.decode(ys, memory, src_mask, causal_mask(ys.shape[1], device=src.device))
        last = ys[:, -1]
        token = torch.where(last == eos_id, eos_id, model.generator(h[:, -1]).argmax(-1))
        ys = torch.cat([ys, token.unsqueeze(-1)], dim=-1)
        if bool((token == eos_id).all()):
            break
    model.train()  # back to training for the next step
    return ys
