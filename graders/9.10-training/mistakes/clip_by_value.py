"""Planted mistake: max_grad_norm used with clip_grad_value_: each value clipped, not the total norm."""
# expect: grad-clipping


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None):
    model.train()
    src, tgt = batch
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    tgt_mask = padding_mask(tgt_in, pad_id) & causal_mask(tgt_in.size(1), device=tgt.device)
    logits = model(src, tgt_in, padding_mask(src, pad_id), tgt_mask)
    loss = label_smoothing_loss(logits, tgt_out, smoothing, ignore_index=pad_id)
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.item()
