"""Computes the loss in float64 (cast back at the end) against a q built by scatter_; zeroes via model.zero_grad."""

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
    step = 1 if step == 0 else step
    return factor * math.pow(d_model, -0.5) * min(math.pow(step, -0.5), step * math.pow(warmup_steps, -1.5))


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    params = list(model.parameters())
    return torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    def rate(step: int) -> float:
        return noam_lr(step, d_model, warmup_steps, factor)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=rate)


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1,
                         ignore_index: int | None = None) -> torch.Tensor:
    n_classes = logits.shape[-1]
    x = logits.reshape(-1, n_classes).double()  # float64 for the sums; the result is cast back
    y = target.reshape(-1)
    if ignore_index is not None:
        real = y != ignore_index
        x, y = x[real], y[real]
    logp = torch.log_softmax(x, dim=1)
    q = torch.full_like(logp, smoothing / n_classes)
    q.scatter_(1, y.unsqueeze(1), 1.0 - smoothing + smoothing / n_classes)
    loss = -(q * logp).sum(dim=1).mean()
    return loss.to(logits.dtype)


def train_step(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, pad_id: int, smoothing: float = 0.1,
               max_grad_norm: float | None = None) -> float:
    model.train()
    model.zero_grad(set_to_none=True)  # every parameter the optimiser holds is the model's
    src, tgt = batch
    dec_in = tgt[:, :-1]
    gold = tgt[:, 1:]
    t = dec_in.shape[1]
    logits = model(src, dec_in, src_mask=padding_mask(src, pad_id),
                   tgt_mask=padding_mask(dec_in, pad_id) & causal_mask(t, dec_in.device))
    loss = label_smoothing_loss(logits, gold, smoothing=smoothing, ignore_index=pad_id)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
    optimizer.step()
    scheduler.step()
    return float(loss.detach())


def greedy_decode(model: torch.nn.Module, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                  src_mask: torch.Tensor | None = None) -> torch.Tensor:
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while ys.size(1) < max_len and not bool(done.all()):
            out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            nxt = model.generator(out[:, -1, :]).argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, eos_id), nxt)
            ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
    return ys
