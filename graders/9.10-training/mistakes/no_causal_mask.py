"""Planted mistake: the decoder input is masked for padding only: each position sees the token it must predict."""
# expect: no-causal-mask


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None):
    model.train()
    src, tgt = batch
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    tgt_mask = padding_mask(tgt_in, pad_id)
    logits = model(src, tgt_in, padding_mask(src, pad_id), tgt_mask)
    loss = label_smoothing_loss(logits, tgt_out, smoothing, ignore_index=pad_id)
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.item()
