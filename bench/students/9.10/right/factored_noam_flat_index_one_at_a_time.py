"""Factors Noam as step^-0.5 * min(1, (step / warmup)^1.5), takes log-probs by flat index, decodes one row at a time."""

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
    s = max(step, 1)
    # min(s^-0.5, s * w^-1.5) = s^-0.5 * min(1, (s / w)^1.5)
    return factor * d_model ** -0.5 * s ** -0.5 * min(1.0, (s / warmup_steps) ** 1.5)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Adam:
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


class NoamMultiplier:
    """A picklable LambdaLR multiplier: the Noam rate after `step` scheduler steps (base lr 1.0)."""

    def __init__(self, d_model: int, warmup_steps: int, factor: float = 1.0):
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor

    def __call__(self, step: int) -> float:
        return noam_lr(step, self.d_model, self.warmup_steps, self.factor)


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, NoamMultiplier(d_model, warmup_steps, factor))


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1,
                         ignore_index: int | None = None) -> torch.Tensor:
    k = logits.size(-1)
    logp = torch.log_softmax(logits.reshape(-1, k), dim=-1)  # (N, K)
    target = target.reshape(-1)  # (N,)
    n = target.numel()
    keep = torch.ones_like(target, dtype=torch.bool) if ignore_index is None else target != ignore_index
    safe = torch.where(keep, target, torch.zeros_like(target))  # ignore_index may be out of range (-100)
    flat = torch.arange(n, device=logits.device) * k + safe
    picked = logp.reshape(-1)[flat]  # log p_{i, y_i}
    per_token = -(1.0 - smoothing) * picked - smoothing * logp.mean(dim=-1)
    per_token = torch.where(keep, per_token, torch.zeros_like(per_token))
    return per_token.sum() / keep.sum()


def train_step(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor], optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, pad_id: int, smoothing: float = 0.1,
               max_grad_norm: float | None = None) -> float:
    src, tgt = batch
    model.train()
    tgt_in, labels = tgt[:, :-1], tgt[:, 1:]
    src_mask = padding_mask(src, pad_id)
    tgt_mask = causal_mask(tgt_in.size(1), device=tgt.device) & padding_mask(tgt_in, pad_id)
    logits = model(src, tgt_in, src_mask, tgt_mask)
    loss = label_smoothing_loss(logits, labels, smoothing, ignore_index=pad_id)
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    return loss.item()


@torch.no_grad()
def _decode_one(model, src, src_mask, max_len, bos_id, eos_id):
    """Greedy decoding of one sequence (batch 1): a list of token ids, bos first, eos last if produced."""
    memory = model.encode(src, src_mask)
    tokens = [bos_id]
    while len(tokens) < max_len:
        ys = torch.tensor([tokens], dtype=torch.long, device=src.device)
        h = model.decode(ys, memory, src_mask, causal_mask(len(tokens), device=src.device))
        nxt = int(model.generator(h[:, -1]).argmax(dim=-1))
        tokens.append(nxt)
        if nxt == eos_id:
            break
    return tokens


def greedy_decode(model: torch.nn.Module, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                  src_mask: torch.Tensor | None = None) -> torch.Tensor:
    outs = []
    for b in range(src.size(0)):
        mask_b = None
        if src_mask is not None:
            mask_b = src_mask[b:b + 1] if src_mask.size(0) > 1 else src_mask
        outs.append(_decode_one(model, src[b:b + 1], mask_b, max_len, bos_id, eos_id))
    n = max(len(t) for t in outs)
    out = torch.full((src.size(0), n), eos_id, dtype=torch.long, device=src.device)  # eos after a finished one
    for b, t in enumerate(outs):
        out[b, :len(t)] = torch.tensor(t, dtype=torch.long, device=src.device)
    return out
