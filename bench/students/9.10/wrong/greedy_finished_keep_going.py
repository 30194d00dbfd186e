"""greedy_decode lets finished sequences keep producing tokens after their eos."""

import torch

from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    step = max(step, 1)
    return factor * (d_model ** -0.5) * min(step ** -0.5, step * warmup_steps ** -1.5)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer, d_model: int, warmup_steps: int, factor: float = 1.0):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: noam_lr(step, d_model, warmup_steps, factor))


def label_smoothing_loss(logits, target, smoothing: float = 0.1, ignore_index=None):
    logp = torch.log_softmax(logits, dim=-1)
    if ignore_index is None:
        keep = torch.ones_like(target, dtype=torch.bool)
    else:
        keep = target != ignore_index
    safe = torch.where(keep, target, torch.zeros_like(target))
    nll = -logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    smooth = -logp.mean(dim=-1)
    loss = (1 - smoothing) * nll + smoothing * smooth
    loss = torch.where(keep, loss, torch.zeros_like(loss))
    return loss.sum() / keep.sum()


def train_step(model, batch, optimizer, scheduler, pad_id: int, smoothing: float = 0.1, max_grad_norm=None) -> float:
    model.train()
    src, tgt = batch
    tgt_in = tgt[:, :-1]
    tgt_out = tgt[:, 1:]
    src_mask = padding_mask(src, pad_id)
    tgt_mask = padding_mask(tgt_in, pad_id) & causal_mask(tgt_in.size(1), device=tgt.device)
    logits = model(src, tgt_in, src_mask, tgt_mask)
    loss = label_smoothing_loss(logits, tgt_out, smoothing, ignore_index=pad_id)
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.item()


def greedy_decode(model, src, max_len: int, bos_id: int, eos_id: int, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while ys.size(1) < max_len and not done.all():
            out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            next_tok = model.generator(out[:, -1]).argmax(dim=-1)
            ys = torch.cat([ys, next_tok.unsqueeze(1)], dim=1)
            done = done | (next_tok == eos_id)
    return ys
