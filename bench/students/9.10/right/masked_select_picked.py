"""Picks each label's log-probability with masked_select on a one-hot bool mask; decodes in a for loop with break."""

import torch

# Your own causal mask (kata 9.7) and Transformer (kata 9.9) when you run this file; the reference
# solutions of those katas when it is graded, so that a mistake made there costs points there only.
from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    step = max(1, step)
    warm = step * warmup_steps ** -1.5
    decay = step ** -0.5
    return float(factor * d_model ** -0.5 * min(decay, warm))


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer, d_model, warmup_steps, factor=1.0):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: noam_lr(k, d_model, warmup_steps, factor))


def label_smoothing_loss(logits, target, smoothing=0.1, ignore_index=None):
    num_classes = logits.size(-1)
    logits = logits.reshape(-1, num_classes)
    target = target.reshape(-1)
    if ignore_index is not None:
        rows = (target != ignore_index).nonzero().squeeze(1)
        logits = logits.index_select(0, rows)
        target = target.index_select(0, rows)
    logp = logits.log_softmax(dim=-1)
    hit = torch.nn.functional.one_hot(target, num_classes).bool()  # (n, K), one True per row
    nll = -logp.masked_select(hit)  # (n,), row order kept
    uniform = -logp.sum(dim=-1) / num_classes
    return ((1 - smoothing) * nll + smoothing * uniform).mean()


def train_step(model, batch, optimizer, scheduler, pad_id, smoothing=0.1, max_grad_norm=None):
    src, tgt = batch
    model.train()
    inp, lab = tgt[:, :-1], tgt[:, 1:]
    smask = padding_mask(src, pad_id)
    tmask = causal_mask(inp.size(-1), device=inp.device).unsqueeze(0).unsqueeze(0) & padding_mask(inp, pad_id)
    out = model(src, inp, smask, tmask)
    loss = label_smoothing_loss(out, lab, smoothing, pad_id)
    optimizer.zero_grad(set_to_none=False)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    print(f"loss {loss.item():.4f}  lr {optimizer.param_groups[0]['lr']:.3e}")
    return loss.item()


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    batch = src.size(0)
    memory = model.encode(src, src_mask)
    ys = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    for _ in range(max_len - 1):
        h = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
        next_tok = model.generator(h[:, -1]).argmax(-1)
        next_tok = next_tok.masked_fill(finished, eos_id)
        ys = torch.cat((ys, next_tok[:, None]), dim=1)
        finished |= next_tok == eos_id
        if finished.all():
            break
    return ys
