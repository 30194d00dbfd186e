"""Planted mistake: the gradients are clipped to a norm of 1.0 by default (max_grad_norm=1.0 in the signature)."""
# expect: fault-in-update


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=1.0):
    model.train()
    src, tgt = batch
    decoder_input, labels = tgt[:, :-1], tgt[:, 1:]
    mask = causal_mask(decoder_input.size(1), device=tgt.device) & padding_mask(decoder_input, pad_id)
    loss = label_smoothing_loss(model(src, decoder_input, padding_mask(src, pad_id), mask), labels, smoothing,
                                ignore_index=pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.detach().item()
