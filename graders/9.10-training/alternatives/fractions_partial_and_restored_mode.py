"""Alternative: powers as parenthesised fractions, a partial as the schedule; the loss summed per sequence, then
divided by the batch's real tokens; greedy decoding in eval mode that puts the caller's mode back."""
import functools
import math


def noam_lr(step, d_model, warmup_steps, factor=1.0):
    step = max(1, step)
    return factor / math.sqrt(d_model) * min(step ** (-1 / 2), step * warmup_steps ** (-3 / 2))


def make_scheduler(optimizer, d_model, warmup_steps, factor=1.0):
    schedule = functools.partial(noam_lr, d_model=d_model, warmup_steps=warmup_steps, factor=factor)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=schedule)


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    n_classes = logits.shape[-1]
    log_p = logits - logits.logsumexp(dim=-1, keepdim=True)
    real = target != ignore_index if ignore_index is not None else torch.full_like(target, True, dtype=torch.bool)
    picked = log_p.gather(-1, torch.where(real, target, 0)[..., None])[..., 0]
    per_token = -(1 - smoothing) * picked - smoothing / n_classes * log_p.sum(-1)
    per_sequence = (per_token * real).sum(dim=-1)  # each sequence's (or row's) sum over its real tokens
    return per_sequence.sum() / real.sum()


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            memory = model.encode(src, src_mask)
            ys = torch.full((len(src), 1), bos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(len(src), dtype=torch.bool, device=src.device)
            for _ in range(max_len - 1):
                if done.all():
                    break
                logits = model.generator(model.decode(ys, memory, src_mask, causal_mask(ys.shape[1], src.device)))
                token = logits[:, -1].argmax(-1)  # (batch,)
                token[done] = eos_id
                done = done | (token == eos_id)
                ys = torch.cat((ys, token[:, None]), dim=1)
    finally:
        model.train(was_training)
    return ys
