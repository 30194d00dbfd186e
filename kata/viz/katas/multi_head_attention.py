"""`kata viz 9.4`: a head with hand-set weights that attends to the previous word, beside every head of an
untrained MultiHeadAttention."""

from __future__ import annotations

from types import ModuleType

import torch

from kata.viz import data
from kata.viz.figure import Figure
from kata.viz.pictures import D_MODEL, N_HEADS, UNTRAINED, attention_map

SUBJECT = "MultiHeadAttention"
NEEDS = ("MultiHeadAttention",)


def build(module: ModuleType) -> list[Figure]:
    """Kata 9.4: a head with hand-set weights that attends to the previous word, beside every head of an
    untrained MultiHeadAttention on the sentence."""
    words, x = data.sentence(D_MODEL)  # x (1, n, d_model)
    d_k = D_MODEL // N_HEADS
    torch.manual_seed(data.SEED)
    handset = module.MultiHeadAttention(D_MODEL, N_HEADS)
    data.set_previous_word_head(handset, D_MODEL, d_k)
    previous = data.multi_head_weights(handset, data.with_positions(x, d_k), N_HEADS)[0]  # (n, n): head 1
    torch.manual_seed(data.SEED)
    mha = module.MultiHeadAttention(D_MODEL, N_HEADS)
    weights = data.multi_head_weights(mha, x, N_HEADS)  # (n_heads, n, n)
    vmax = float(weights.max())
    return [Figure(
        "attention", f"Attention weights per head: MultiHeadAttention(d_model={D_MODEL}, n_heads={N_HEADS}), "
                     f"self-attention, d_k = {d_k}",
        "One map per head (rows: queries, columns: keys; every row sums to 1). Left, on its own colour scale: head 1 "
        f"of your MultiHeadAttention with hand-set weights. The words' last {d_k} features hold their positions "
        "(kata 9.8's sines and cosines); w_k passes them on and w_q turns each back by one position, so each word's "
        "weight sits on the word before it (the first word has none and takes itself, the nearest): the pattern of a "
        "trained 'previous token' head. Right: the heads of an untrained MultiHeadAttention, each projecting the "
        "words with its own random slice of w_q and w_k. " + UNTRAINED + " So their weights stay near 1/10: "
        "training is what gives heads patterns.",
        [attention_map("hand-set head 1: the previous word", previous, words, words, 1.0),
         *(attention_map(f"untrained head {h + 1}", weights[h], words, words, vmax)
           for h in range(N_HEADS))])]
