"""Builds the smoothed target distribution q explicitly with one_hot and takes -sum(q log p), masking padding by indexing."""

import math

import torch
import torch.nn.functional as F

from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    if step == 0:
        step = 1
    return factor / math.sqrt(d_model) * min(1 / math.sqrt(step), step / warmup_steps ** 1.5)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer, d_model: int, warmup_steps: int, factor: float = 1.0):
    def schedule(step):
        return noam_lr(step, d_model, warmup_steps, factor)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=schedule)


def label_smoothing_loss(logits, target, smoothing: float = 0.1, ignore_index=None):
    k = logits.size(-1)
    logits = logits.reshape(-1, k)
    target = target.reshape(-1)
    if ignore_index is not None:
        real = target != ignore_index
        logits, target = logits[real], target[real]
    q = F.one_hot(target, k).to(logits.dtype) * (1 - smoothing) + smoothing / k
    return -(q * torch.log_softmax(logits, dim=-1)).sum(dim=-1).mean()


def train_step(model, batch, optimizer, scheduler, pad_id: int, smoothing: float = 0.1, max_grad_norm=None) -> float:
    model.train()
    src, tgt = batch
    decoder_in, labels = tgt[:, :-1], tgt[:, 1:]
    src_mask = padding_mask(src, pad_id)
    tgt_mask = causal_mask(decoder_in.shape[1], device=src.device) & padding_mask(decoder_in, pad_id)
    optimizer.zero_grad(set_to_none=True)
    logits = model(src, decoder_in, src_mask, tgt_mask)
    loss = label_smoothing_loss(logits, labels, smoothing=smoothing, ignore_index=pad_id)
    loss.backward()
    if max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
    optimizer.step()
    scheduler.step()
    return float(loss)


def greedy_decode(model, src, max_len: int, bos_id: int, eos_id: int, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        for _ in range(max_len - 1):
            if (out == eos_id).any(dim=1).all():
                break
            h = model.decode(out, memory, src_mask, causal_mask(out.shape[1], device=src.device))
            nxt = model.generator(h[:, -1, :]).argmax(-1)
            ended = (out == eos_id).any(dim=1)
            nxt[ended] = eos_id
            out = torch.cat((out, nxt[:, None]), dim=1)
    return out
