"""A correct version that prints the loss and learning rate each step and decodes with a for loop and break."""

import torch

from kata.earlier.decoder_block import causal_mask  # kata 9.7
from kata.earlier.transformer import Transformer, padding_mask  # kata 9.9

__all__ = [
    "Transformer", "greedy_decode", "label_smoothing_loss", "make_optimizer", "make_scheduler", "noam_lr",
    "train_step",
]


def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    step = 1 if step < 1 else step
    return factor * (d_model ** (-0.5)) * min(step ** (-0.5), step * (warmup_steps ** (-1.5)))


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    return torch.optim.Adam(model.parameters(), lr=1, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(optimizer, d_model: int, warmup_steps: int, factor: float = 1.0):
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda=lambda step: noam_lr(step, d_model=d_model, warmup_steps=warmup_steps, factor=factor))


def label_smoothing_loss(logits, target, smoothing: float = 0.1, ignore_index=None):
    log_probs = logits.log_softmax(dim=-1)
    mask = target != ignore_index if ignore_index is not None else torch.ones_like(target, dtype=torch.bool)
    picked = log_probs.gather(-1, target.clamp(0, logits.size(-1) - 1).unsqueeze(-1)).squeeze(-1)
    per_token = -(1 - smoothing) * picked - smoothing * log_probs.mean(-1)
    return per_token[mask].sum() / mask.sum()


def train_step(model, batch, optimizer, scheduler, pad_id: int, smoothing: float = 0.1, max_grad_norm=None) -> float:
    src, tgt = batch
    model.train()
    optimizer.zero_grad()
    decoder_input = tgt[:, :-1]
    target = tgt[:, 1:]
    tgt_mask = causal_mask(decoder_input.size(1), device=tgt.device) & padding_mask(decoder_input, pad_id)
    logits = model(src, decoder_input, src_mask=padding_mask(src, pad_id), tgt_mask=tgt_mask)
    loss = label_smoothing_loss(logits, target, smoothing=smoothing, ignore_index=pad_id)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    print(f"loss {loss.item():.4f}  lr {optimizer.param_groups[0]['lr']:.2e}")
    return loss.item()


def greedy_decode(model, src, max_len: int, bos_id: int, eos_id: int, src_mask=None):
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.ones(src.size(0), 1, dtype=torch.long, device=src.device) * bos_id
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for _ in range(1, max_len):
            decoded = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            probs = model.generator(decoded[:, -1]).softmax(dim=-1)
            next_word = probs.argmax(dim=-1)
            next_word[finished] = eos_id
            ys = torch.cat([ys, next_word.unsqueeze(-1)], dim=-1)
            finished |= next_word == eos_id
            if finished.all():
                break
    return ys
