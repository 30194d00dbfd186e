"""Keeps the (..., K) shape: blanks the padded rows with masked_fill, sums the row losses and divides by the real count; the schedule is a functools.partial."""

import functools

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
    if step < 1:
        step = 1
    warm = step * warmup_steps ** (-1.5)
    decay = step ** (-0.5)
    return factor * (d_model ** (-0.5)) * min(warm, decay)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    params = list(model.parameters())
    return torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    rate = functools.partial(noam_lr, d_model=d_model, warmup_steps=warmup_steps, factor=factor)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, rate)


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1,
                         ignore_index: int | None = None) -> torch.Tensor:
    if ignore_index is None:
        real = torch.ones_like(target, dtype=torch.bool)
    else:
        real = target != ignore_index
    # padded rows: logits set to 0 and target to class 0, so nothing there can be inf/nan or out of range
    safe_logits = logits.masked_fill(~real.unsqueeze(-1), 0.0)
    safe_target = target.masked_fill(~real, 0)
    log_p = torch.log_softmax(safe_logits, dim=-1)
    nll = -log_p.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - smoothing) * nll + smoothing * uniform
    per_token = per_token.masked_fill(~real, 0.0)
    return per_token.sum() / real.sum()


def train_step(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, pad_id: int, smoothing: float = 0.1,
               max_grad_norm: float | None = None) -> float:
    model.train()
    src, tgt = batch
    decoder_input, labels = tgt[:, :-1], tgt[:, 1:]
    length = decoder_input.shape[1]
    src_mask = padding_mask(src, pad_id)
    tgt_mask = padding_mask(decoder_input, pad_id) & causal_mask(length, device=src.device)
    model.zero_grad(set_to_none=True)
    logits = model(src, decoder_input, src_mask=src_mask, tgt_mask=tgt_mask)
    loss = label_smoothing_loss(logits, labels, smoothing=smoothing, ignore_index=pad_id)
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
        ys = src.new_full((src.shape[0], 1), bos_id)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(1, max_len):
            h = model.decode(ys, memory, src_mask, causal_mask(ys.shape[1], device=ys.device))
            logits = model.generator(h[:, -1, :])
            nxt = logits.argmax(dim=-1)
            nxt = nxt.masked_fill(done, eos_id)
            ys = torch.cat((ys, nxt.unsqueeze(-1)), dim=-1)
            done = done | nxt.eq(eos_id)
            if done.all():
                break
    return ys.long()
