"""Writes the smoothed loss as nll_loss plus e times the mean negative log-probability, and decodes into a preallocated buffer."""

import torch
import torch.nn.functional as F

from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    s = max(1, step)
    if s < warmup_steps:
        rate = s * warmup_steps ** -1.5
    else:
        rate = s ** -0.5
    return factor * d_model ** -0.5 * rate


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    return torch.optim.Adam(params=model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer, d_model: int, warmup_steps: int, factor: float = 1.0):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: noam_lr(k, d_model, warmup_steps, factor))


def label_smoothing_loss(logits, target, smoothing: float = 0.1, ignore_index=None):
    k = logits.shape[-1]
    logp = F.log_softmax(logits.reshape(-1, k), dim=-1)
    flat = target.reshape(-1)
    ignore = -100 if ignore_index is None else ignore_index
    keep = flat != ignore
    nll = F.nll_loss(logp, flat, ignore_index=ignore, reduction="sum")
    uniform = -(logp.mean(dim=-1) * keep).sum()
    return ((1 - smoothing) * nll + smoothing * uniform) / keep.sum()


def train_step(model, batch, optimizer, scheduler, pad_id: int, smoothing: float = 0.1, max_grad_norm=None) -> float:
    model.train()
    src, tgt = batch
    inp, gold = tgt[:, :-1], tgt[:, 1:]
    masks = padding_mask(src, pad_id), padding_mask(inp, pad_id) & causal_mask(inp.size(-1), device=inp.device)
    loss = label_smoothing_loss(model(src, inp, *masks), gold, smoothing, pad_id)
    for p in model.parameters():
        p.grad = None
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.detach().item()


@torch.no_grad()
def greedy_decode(model, src, max_len: int, bos_id: int, eos_id: int, src_mask=None):
    batch = src.size(0)
    memory = model.encode(src, src_mask)
    ys = torch.full((batch, max_len), eos_id, dtype=torch.long, device=src.device)
    ys[:, 0] = bos_id
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    n = 1
    while n < max_len and not bool(finished.all()):
        h = model.decode(ys[:, :n], memory, src_mask, causal_mask(n, device=src.device))
        token = model.generator(h[:, -1]).argmax(-1)
        ys[:, n] = torch.where(finished, eos_id, token)
        finished = finished | (ys[:, n] == eos_id)
        n += 1
    return ys[:, :n]
