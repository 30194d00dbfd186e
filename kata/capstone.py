"""The capstone tasks of kata 9.10: the one list of them, each with its data, model size and training recipe.

Plain data (no torch: the `kata` command reads the names at start-up); kata.copy_task makes their batches
and trains them. `kata train-demo --task NAME` trains any of them; `kata check 9.10` trains the copy task.
"""

from __future__ import annotations

from dataclasses import dataclass

N_SPECIAL = 3  # pad, bos, eos; the symbols are 3, 4, ..., vocab_size - 1


@dataclass(frozen=True)
class CopyTask:
    """A capstone task's data, model and training recipe (tuned to learn in seconds on one CPU thread)."""

    name: str = "copy"
    about: str = "copy the source"  # what the model learns, for reports
    reverse: bool = False  # the target is the source backwards
    eval_padding: int = 0  # pad columns added to the validation and held-out sources (never to training's)
    # Data: sequences of min_len..max_len symbols drawn uniformly from n_symbols.
    n_symbols: int = 10
    min_len: int = 3
    max_len: int = 8
    # The model: a small post-norm Transformer (kata 9.9), one encoder and one decoder block.
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 1
    d_ff: int = 128
    dropout: float = 0.0
    # Training: Adam with the Noam schedule and the label-smoothed loss, as in the paper.
    batch_size: int = 128
    steps: int = 300  # at most: training stops early once the validation accuracy reaches stop_accuracy
    warmup_steps: int = 50
    factor: float = 0.5
    smoothing: float = 0.1
    max_grad_norm: float | None = 1.0
    # Early stopping: greedy accuracy on validation sequences every eval_every steps from first_eval on;
    # stop at stop_accuracy, else keep the weights of the best evaluation.
    first_eval: int = 100
    eval_every: int = 25
    n_validation: int = 200
    stop_accuracy: float = 0.99
    # The test: greedy whole-sequence accuracy on held-out sequences (never used to decide anything).
    n_heldout: int = 200
    target_accuracy: float = 0.95

    @property
    def vocab_size(self) -> int:
        return N_SPECIAL + self.n_symbols

    @property
    def decode_len(self) -> int:
        """The longest target, bos and eos included: greedy decoding's max_len."""
        return self.max_len + 2

    def model_kwargs(self) -> dict:
        return {"d_model": self.d_model, "n_heads": self.n_heads, "n_layers": self.n_layers, "d_ff": self.d_ff,
                "dropout": self.dropout, "max_len": 64}


TASK = CopyTask()  # the copy task: the capstone's check and the default of train-demo and viz

# The reversal task: the target is the source backwards, so output t comes from source position
# length - 1 - t; its evaluations carry 4 more pad columns than training ever had. Only a model whose
# padding masks hide the padding decodes them as it decodes training's (see kata.copy_task). It needs
# more steps than copying: 250 to 400 with the reference solutions (bench/capstone_tasks.py).
REVERSE_TASK = CopyTask(name="reverse", about="reverse the source (its evaluations padded wider than training)",
                        reverse=True, eval_padding=4, steps=400)

TASKS = {task.name: task for task in (TASK, REVERSE_TASK)}
