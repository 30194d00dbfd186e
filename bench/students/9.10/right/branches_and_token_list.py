"""Writes the Noam rate as an explicit warm-up/decay if, the loss with take_along_dim on the real rows, and collects decoded columns in a list."""

import math

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
    s = 1 if step == 0 else step
    if s < warmup_steps:
        rate = s / warmup_steps ** 1.5      # linear warm-up
    else:
        rate = 1 / math.sqrt(s)             # inverse square-root decay
    return factor * rate / math.sqrt(d_model)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    return optimizer


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    def noam_multiplier(step):
        return noam_lr(step, d_model, warmup_steps, factor)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_multiplier)
    return scheduler


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1,
                         ignore_index: int | None = None) -> torch.Tensor:
    K = logits.size(-1)
    logits = logits.reshape(-1, K)
    target = target.reshape(-1)
    if ignore_index is not None:
        keep = target != ignore_index
        logits = logits[keep]
        target = target[keep]
    log_probs = logits.log_softmax(dim=1)
    confident = -torch.take_along_dim(log_probs, target[:, None], dim=1).squeeze(1)
    spread = -log_probs.sum(dim=1) / K
    loss = (1 - smoothing) * confident + smoothing * spread
    return loss.sum() / target.numel()


def train_step(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, pad_id: int, smoothing: float = 0.1,
               max_grad_norm: float | None = None) -> float:
    model.train()
    src, tgt = batch
    inp = tgt[:, :-1]
    gold = tgt[:, 1:]
    masks = {
        "src_mask": padding_mask(src, pad_id),
        "tgt_mask": causal_mask(inp.size(1), device=inp.device) & padding_mask(inp, pad_id),
    }
    logits = model(src, inp, **masks)
    loss = label_smoothing_loss(logits, gold, smoothing=smoothing, ignore_index=pad_id)
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.item()


def greedy_decode(model: torch.nn.Module, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                  src_mask: torch.Tensor | None = None) -> torch.Tensor:
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        columns = [torch.full((src.size(0),), bos_id, dtype=torch.long, device=src.device)]
        ended = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while len(columns) < max_len:
            ys = torch.stack(columns, dim=1)
            hidden = model.decode(ys, memory, src_mask, causal_mask(len(columns), device=src.device))
            best = model.generator(hidden[:, -1]).argmax(-1)
            best[ended] = eos_id
            columns.append(best)
            ended |= best == eos_id
            if ended.all():
                break
        return torch.stack(columns, dim=1)
