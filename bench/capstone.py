"""The 9.10 capstone: time to 0.95 greedy whole-sequence accuracy on the copy task, median of 3 seeds,
with the course's reference Transformer side by side with the same model built from torch's own layers.

Both train with the reference 9.10 pieces (Adam, the Noam schedule, the label-smoothed train_step,
greedy decoding) on the same batches (kata.copy_task): only the model differs. The baseline is torch's
`nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer` (post-norm, as the task's model), with
`nn.Embedding` scaled by √d_model, the paper's sinusoidal encodings, and Xavier initialisation (as
`nn.Transformer` and the reference use). "Time to 0.95" is the wall time
at the first validation evaluation (every 25 steps from step 100) that reaches 0.95; the held-out
accuracy is measured once, at the end.

    python bench/capstone.py [--seeds 0 1 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = 0.95


def torch_model_class():
    """The copy task's model (kata 9.9's interface: encode, decode, generator) from torch's built-in layers."""
    import torch
    from torch import nn

    class TorchTransformer(nn.Module):
        def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int, n_heads: int, n_layers: int,
                     d_ff: int, dropout: float, max_len: int):
            super().__init__()
            self.d_model, self.n_heads = d_model, n_heads
            self.src_embed = nn.Embedding(src_vocab_size, d_model)
            self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
            position = torch.arange(max_len)[:, None]  # (max_len, 1)
            rate = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (d_model / 2,)
            pe = torch.zeros(max_len, d_model)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)
            self.register_buffer("pe", pe)  # (max_len, d_model)
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout, batch_first=True), n_layers,
                enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoder(
                nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout, batch_first=True), n_layers)
            self.generator = nn.Linear(d_model, tgt_vocab_size)
            for p in self.parameters():  # as nn.Transformer (and the reference) do
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

        def _embed(self, embed: nn.Embedding, tokens):
            return embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.size(1)]  # (batch, len, d_model)

        @staticmethod
        def _padding(mask, length: int):
            # Ours: (batch, 1, 1, len), True = may attend. Torch's: (batch, len), True = ignore.
            return None if mask is None else ~mask.reshape(mask.size(0), length)

        def encode(self, src, src_mask=None):
            return self.encoder(self._embed(self.src_embed, src),
                                src_key_padding_mask=self._padding(src_mask, src.size(1)))

        def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
            n = tgt.size(1)
            if tgt_mask is None:
                attn = None
            elif tgt_mask.dim() == 2:  # (n, n)
                attn = ~tgt_mask
            else:  # (batch, 1, n, n) -> (batch * n_heads, n, n)
                attn = ~tgt_mask.expand(tgt.size(0), self.n_heads, n, n).reshape(-1, n, n)
            return self.decoder(self._embed(self.tgt_embed, tgt), memory, tgt_mask=attn,
                                memory_key_padding_mask=self._padding(src_mask, memory.size(1)))

        def forward(self, src, tgt, src_mask=None, tgt_mask=None):
            return self.generator(self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask))

    return TorchTransformer


def load_reference():
    """The reference 9.10 solution, on the reference pieces of katas 9.2 to 9.9."""
    from kata.course import load_course
    from kata.student_code import load_reference as load

    course = load_course(REPO)
    return load(course, course.find("9.10"))


def time_to_target(Transformer, ref, seed: int) -> tuple[float | None, float, int, float]:
    """(seconds to the first validation accuracy >= TARGET or None, held-out accuracy, steps, seconds)."""
    from kata.copy_task import TASK, train_copy_task

    started = time.perf_counter()
    reached: list[float] = []

    def on_eval(step: int, accuracy: float) -> None:
        if accuracy >= TARGET and not reached:
            reached.append(time.perf_counter() - started)

    run = train_copy_task(TASK, Transformer=Transformer, padding_mask=ref.padding_mask,
                          make_optimizer=ref.make_optimizer, make_scheduler=ref.make_scheduler,
                          train_step=ref.train_step, greedy_decode=ref.greedy_decode, seed=seed, on_eval=on_eval)
    return (reached[0] if reached else None), run.accuracy, run.steps, run.seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    ref = load_reference()
    models = {"course reference (from scratch)": ref.Transformer, "torch.nn built-in layers": torch_model_class()}
    rows = {label: [time_to_target(model, ref, seed) for seed in args.seeds] for label, model in models.items()}
    print(f"copy task, seeds {args.seeds}, {args.threads} torch thread(s), torch {torch.__version__}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':<34}{'to 0.95 (median)':>18}{'per seed':>24}{'held-out acc':>14}{'steps':>8}")
    medians = {}
    for label, runs in rows.items():
        times = [r[0] for r in runs]
        reached = [t for t in times if t is not None]
        medians[label] = statistics.median(reached) if len(reached) == len(times) else None
        shown = "not reached" if medians[label] is None else f"{medians[label]:.1f} s"
        per_seed = " ".join("—" if t is None else f"{t:.1f}" for t in times)
        print(f"{label:<34}{shown:>18}{per_seed:>24}{statistics.median(r[1] for r in runs):>14.3f}"
              f"{statistics.median(r[2] for r in runs):>8g}")
    ours, theirs = medians.values()
    if ours and theirs:
        print(f"ratio reference / torch built-ins: {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
