"""Alternative: zero_grad(set_to_none=True) before the forward; greedy decoding over a preallocated buffer."""


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    src, tgt = batch
    decoder_input, labels = tgt[:, :-1], tgt[:, 1:]
    causal = causal_mask(decoder_input.shape[1], decoder_input.device)
    logits = model(src, decoder_input, padding_mask(src, pad_id), causal & padding_mask(decoder_input, pad_id))
    loss = label_smoothing_loss(logits, labels, smoothing=smoothing, ignore_index=pad_id)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
    optimizer.step()
    scheduler.step()
    return float(loss.detach())


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], max_len), eos_id, dtype=torch.long, device=src.device)
    ys[:, 0] = bos_id
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    n = 1
    while n < max_len and not bool(done.all()):
        h = model.decode(ys[:, :n], memory, src_mask, causal_mask(n, device=src.device))
        token = torch.where(done, eos_id, model.generator(h[:, -1]).argmax(-1))
        ys[:, n] = token
        done = done | (token == eos_id)
        n += 1
    return ys[:, :n]
