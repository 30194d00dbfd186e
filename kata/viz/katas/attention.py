"""`kata viz 9.3`: one attention head on a sentence, without and with a causal mask."""

from __future__ import annotations

from types import ModuleType

import torch

from kata.viz import data
from kata.viz.figure import Figure
from kata.viz.pictures import D_MODEL, N_HEADS, UNTRAINED, attention_map

SUBJECT = "AttentionHead"
NEEDS = ("AttentionHead",)
D_HEAD = D_MODEL // N_HEADS  # as one head of kata 9.4 would be


def build(module: ModuleType) -> list[Figure]:
    """Kata 9.3: one AttentionHead on the sentence, without a mask and with a causal one."""
    words, x = data.sentence(D_MODEL)  # x (1, n, d_model)
    torch.manual_seed(data.SEED)
    head = module.AttentionHead(D_MODEL, D_HEAD)
    plain = data.head_weights(head, x)  # (n, n)
    masked = data.head_weights(head, x, data.causal(len(words)))  # (n, n)
    return [Figure(
        "attention", f"Attention weights of one head: AttentionHead(d_model={D_MODEL}, d_head={D_HEAD})",
        "Each row is one query word's weights over the key words; every row sums to 1. " + UNTRAINED
        + " So the weights stay close to uniform (1/10) and both \"the\"s get the same weight from every query. "
        "With the causal mask a word sees only itself and the words before it: above the diagonal is exactly 0.",
        [attention_map("self-attention, no mask", plain, words, words, float(plain.max())),
         attention_map("with a causal mask (True on and below the diagonal)", masked, words, words, 1.0)])]
