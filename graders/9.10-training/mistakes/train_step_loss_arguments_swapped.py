"""Planted mistake: the loss's last two arguments given in the step's order, pad_id first: label_smoothing_loss(logits,
labels, pad_id, smoothing), so the smoothing is pad_id and nothing is ignored."""
# expect: fault-in-loss-call


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None):
    model.train()
    optimizer.zero_grad()
    src, tgt = batch
    tgt_in = tgt[:, :-1]
    logits = model(src, tgt_in, padding_mask(src, pad_id),
                   padding_mask(tgt_in, pad_id) & causal_mask(tgt_in.size(1), device=tgt.device))
    loss = label_smoothing_loss(logits, tgt[:, 1:], pad_id, smoothing)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return float(loss)
