"""Graders of kata 9.10: the signatures' defaults (course spec: `noam_lr(step, d_model, warmup_steps,
factor=1.0)`, `make_scheduler(optimizer, d_model, warmup_steps, factor=1.0)`, `train_step(model, batch,
optimizer, scheduler, pad_id, smoothing=0.1)`), and greedy decoding's stop at a max_len above 256.

Hidden from students. The other checks pass every argument; these leave one out and compare the student's
function with itself given the contract's value (kata.toolkit.defaults). Models and optimisers are built in the
student's process from the reference Transformer of kata 9.9 and torch's own optimisers.
"""

import torch

from kata import copy_task
from kata.toolkit import Mistake, fail, remote
from kata.toolkit.compare import describe
from kata.toolkit.defaults import check_function_defaults

PAD, BOS, EOS = copy_task.PAD_ID, copy_task.BOS_ID, copy_task.EOS_ID
SMALL = dict(src_vocab_size=9, tgt_vocab_size=9, d_model=16, n_heads=2, n_layers=1, d_ff=16, dropout=0.0)

MAX_LEN_BY_IDENTITY = Mistake(
    "max-len-compared-by-identity",
    "the length is compared with max_len by identity (`is` / `is not`), not by value: Python keeps one object "
    "for each small int (up to 256), so the loop stops at a small max_len and never at a larger one. Compare "
    "numbers with < (while ys.size(1) < max_len)")


def test_noam_lr_default_factor(student):
    """noam_lr(step, d_model, warmup_steps) has factor 1 (the signature's default)"""
    steps = (1, 5, 10, 40)
    check_function_defaults(
        lambda **kw: torch.tensor([float(student.noam_lr(s, 64, 10, **kw)) for s in steps], dtype=torch.float64),
        {"factor": 1.0}, signature="noam_lr(step, 64, 10)", what=f"at steps {steps}")


def test_make_scheduler_default_factor(student):
    """make_scheduler(optimizer, d_model, warmup_steps) has factor 1 (the signature's default)"""
    adam = remote.earlier("transformer").torch.optim.Adam

    def lrs(**kw) -> torch.Tensor:
        optimizer = adam([torch.zeros(1, requires_grad=True)], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        scheduler = student.make_scheduler(optimizer, 64, 10, **kw)
        got = [float(optimizer.param_groups[0]["lr"])]
        for _ in range(2):
            optimizer.step()
            scheduler.step()
            got.append(float(optimizer.param_groups[0]["lr"]))
        return torch.tensor(got, dtype=torch.float64)

    check_function_defaults(lrs, {"factor": 1.0}, signature="make_scheduler(Adam(lr=1.0), 64, 10)",
                            what="the lr after 0, 1 and 2 scheduler steps")


def test_train_step_default_smoothing(student):
    """train_step(model, batch, optimizer, scheduler, pad_id) smooths the labels by 0.1 (the signature's default)"""
    earlier = remote.earlier("transformer")
    src = torch.tensor([[4, 5, 6, 7, EOS], [8, 4, EOS, PAD, PAD]])  # (batch, src_len)
    tgt = torch.cat([torch.full((2, 1), BOS), src], dim=1)  # (batch, tgt_len): bos, then the copy

    def loss(**kw) -> float:
        # The loss is computed before the update, from the model alone: the optimiser holds a tensor of its own.
        model = earlier.Transformer(**SMALL, max_len=16)  # its weights drawn from the seed the call starts with
        optimizer = earlier.torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
        scheduler = earlier.torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
        return float(student.train_step(model, (src, tgt), optimizer, scheduler, PAD, **kw))

    check_function_defaults(loss, {"smoothing": 0.1}, signature="train_step(model, batch, optimizer, scheduler, "
                            "pad_id)", what=f"the loss of a batch src {describe(src)}")


def test_greedy_max_len_above_256(student, reference):
    """Greedy decoding stops at max_len above 256 too (300 columns from a model that never produces eos)"""
    max_len = 300
    # No layers (embeddings, positions and the generator): 300 decoding steps of the smallest model there is.
    # Its positions end at max_len: a longer sequence raises ValueError.
    small = {**SMALL, "n_layers": 0, "max_len": max_len}
    model = reference.Transformer(**small)
    with torch.no_grad():
        model.generator.bias[EOS] = -1e4  # eos never comes: max_len alone ends the decoding
    twin = remote.earlier("transformer").Transformer(**small)
    twin.load_state_dict(model.state_dict())
    twin.eval()
    src = torch.tensor([[4, 5, 6, EOS]])  # (batch, src_len)
    context = f"a model that never produces eos and has positions for {max_len} tokens, src {describe(src)}"
    short = student.greedy_decode(twin, src, 7, BOS, EOS)
    right_when_short = isinstance(short, torch.Tensor) and tuple(short.shape) == (1, 7)
    try:
        out = student.greedy_decode(twin, src, max_len, BOS, EOS)
    except (NotImplementedError, remote.StudentForbidden):
        raise
    except remote.StudentError as exc:
        if "ValueError" not in exc.mro:
            raise
        fail(f"greedy_decode(model, src, max_len={max_len}, ...) went on past {max_len} tokens for {context}: the "
             f"model refused a longer sequence ({exc})", *((MAX_LEN_BY_IDENTITY,) if right_when_short else ()))
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (1, max_len):
        fail(f"greedy_decode(model, src, max_len={max_len}, ...) should return (1, {max_len}) token ids for "
             f"{context}, got {describe(out)}")
