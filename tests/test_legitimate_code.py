"""Legitimate code never costs points: a corpus of what a student's file may do while it is graded.

Each behaviour is a piece of code students write while they learn and debug (printing tensors of
every kind, logging, warnings, asserts, their own NamedTuple or dataclass, caches, numpy round trips,
...). `fragment(names)` appends them to a kata's reference solution: module-level parts run when the
file is imported, and every public function and every public method of the file's classes (`forward`,
`encode`...) is wrapped so that the per-call parts run inside the graded calls themselves, on the
inputs and the output of each call (the first `EVERY_CALL` calls of each callable, then every
`SAMPLE`-th: the capstone of 9.10 calls `forward` thousands of times). Each kata is graded once with
every behaviour, through the real runner and the real grading child; it must get full marks. When it
does not, the kata is graded again with each behaviour alone, and the assertion names the behaviours
that broke it.

The student's code runs in a process of its own, behind walls (`kata.student.walls`) that stop it from
harming anything outside it, not from doing what programs do: it may start processes, write its /tmp,
generate and compile code. `torch.compile` (which does all three) is not in the corpus only because it takes
long: it has a test of its own (`test_torch_compile_works`).
"""

from __future__ import annotations

import textwrap

import pytest

from kata import runner

TIMEOUT = 300  # about correctness, not speed: generous for a loaded machine
EVERY_CALL = 20
SAMPLE = 25

# name: (module-level code, per-call code). The per-call code is the body of a function of
# `tensors` (every tensor among the call's arguments and results) and `result`.
BEHAVIOURS: dict[str, tuple[str, str]] = {
    "print-tensors": ("", """
        for t in tensors:
            print(t)
    """),
    "repr-and-str": ("", """
        for t in tensors:
            repr(t), str(t)
            print(repr(t.sum()) if t.dtype != torch.bool else repr(t.any()))
    """),
    "f-strings": ("", """
        for t in tensors:
            print(f"{t}", f"{t.shape} {t.dtype} {t.device}", f"{t!r:.40}")
            if t.numel() and t.device.type != "meta":
                print(f"{t.flatten()[0].item():.3f}" if t.is_floating_point() else f"{t.flatten()[0].item()}")
    """),
    "every-dtype": ("", """
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                      torch.uint8, torch.bool, torch.complex64):
            print(dtype, torch.arange(6).reshape(2, 3).to(dtype))
        for t in tensors:
            print(t.to(torch.float16), t.to(torch.bfloat16), t.to(torch.int64), t.to(torch.bool))
    """),
    "zero-dim": ("", """
        print(torch.tensor(3.5), torch.tensor(True), torch.tensor(7))
        for t in tensors:
            print(t.float().sum() if t.is_floating_point() or t.dtype == torch.bool else t.sum())
    """),
    "empty": ("", """
        print(torch.empty(0), torch.zeros(0, 3), torch.ones(2, 0, dtype=torch.bool))
        for t in tensors:
            if t.dim():
                print(t.narrow(-1, 0, 0))
    """),
    "large": ("", """
        print(torch.arange(120_000, dtype=torch.float32).reshape(300, 400))
        for t in tensors:
            print(t.float().expand(3, *t.shape))
    """),
    "set-printoptions": ("torch.set_printoptions(precision=3, sci_mode=False, linewidth=120)\n", """
        torch.set_printoptions(precision=2, threshold=50, edgeitems=2)
        for t in tensors:
            print(t)
        torch.set_printoptions(precision=3, sci_mode=False, linewidth=120, threshold=1000, edgeitems=3)
    """),
    "logging": ("""
        import logging
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
        log = logging.getLogger(__name__)
        log.info("module loaded")
    """, """
        for t in tensors:
            log.debug("shape %s dtype %s", tuple(t.shape), t.dtype)
            log.info("%s", t)
        logging.getLogger("legit.child").warning("a warning through logging")
    """),
    "warnings": ("import warnings\nwarnings.warn('imported: a warning at import time')\n", """
        import warnings
        for t in tensors:
            warnings.warn(f"shape {tuple(t.shape)}", stacklevel=2)
        warnings.warn("a deprecation of mine", DeprecationWarning)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.warn("ignored")
    """),
    "assert": ("", """
        for t in tensors:
            assert isinstance(t, torch.Tensor), type(t)
            assert t.dim() == len(t.shape), f"{t.shape}"
        assert result is not NotImplemented
    """),
    "named-tuple": ("""
        import collections
        from typing import NamedTuple


        class Stats(NamedTuple):
            mean: float
            spread: float = 0.0
            note: str = "stats"


        Pair = collections.namedtuple("Pair", "first second", defaults=(None,))
    """, """
        for t in tensors:
            s = Stats(float(t.numel()))
            print(s, s._replace(spread=1.0), s._asdict(), Pair(t.shape), Pair(1, 2)._fields)
            collections.namedtuple("Local", "a b", defaults=(0,))(1)
    """),
    "dataclass": ("""
        import dataclasses


        @dataclasses.dataclass(frozen=True)
        class Shape:
            dims: tuple
            dtype: str = "float32"
            tags: list = dataclasses.field(default_factory=list, compare=False)


        @dataclasses.dataclass(order=True, slots=True)
        class Counter:
            calls: int = 0
    """, """
        counter = Counter()
        for t in tensors:
            shape = Shape(tuple(t.shape), str(t.dtype))
            counter.calls += 1
            print(shape, dataclasses.asdict(shape), dataclasses.replace(shape, dtype="x"), counter < Counter(99))
        dataclasses.make_dataclass("Made", [("a", int, dataclasses.field(default=1))])()
    """),
    "enum": ("""
        import enum


        class Norm(enum.Enum):
            PRE = "pre"
            POST = enum.auto()


        class Level(enum.IntEnum):
            LOW = 1
            HIGH = 2


        class Flags(enum.Flag):
            A = enum.auto()
            B = enum.auto()
    """, """
        print(list(Norm), Norm("pre"), Norm["POST"], Level(2) > Level.LOW, Flags.A | Flags.B)
        enum.Enum("Made", "X Y")
    """),
    "typed-dict": ("""
        from typing import TypedDict


        class Info(TypedDict, total=False):
            shape: tuple
            dtype: str
    """, """
        for t in tensors:
            info: Info = {"shape": tuple(t.shape), "dtype": str(t.dtype)}
            print(info, Info.__annotations__)
    """),
    "lru-cache": ("""
        import functools


        @functools.lru_cache(maxsize=None)
        def fib(n: int) -> int:
            return n if n < 2 else fib(n - 1) + fib(n - 2)


        @functools.cache
        def scale(d: int) -> float:
            return d ** -0.5
    """, """
        import functools

        for t in tensors:
            fib(20 + t.dim()), scale(max(1, t.shape[-1] if t.dim() else 1))
        fib.cache_info()
        functools.partial(max, 0)(1)
        functools.reduce(lambda a, b: a * b, [1, 2, 3])
    """),
    "helper-class": ("""
        class Recorder:
            \"\"\"A helper of the student's: properties, class and static methods, inheritance.\"\"\"

            __slots__ = ("seen",)
            kind = "recorder"

            def __init__(self):
                self.seen = []

            def __call__(self, t):
                self.seen.append(tuple(t.shape))
                return self

            def __repr__(self):
                return f"Recorder({self.seen})"

            @property
            def count(self):
                return len(self.seen)

            @classmethod
            def make(cls):
                return cls()

            @staticmethod
            def describe(t):
                return f"{t.dtype}{list(t.shape)}"


        class LoudRecorder(Recorder):
            __slots__ = ()

            def __call__(self, t):
                print("recording", self.describe(t))
                return super().__call__(t)
    """, """
        recorder = LoudRecorder.make()
        for t in tensors:
            recorder(t)
        print(recorder, recorder.count, Recorder.kind)
    """),
    "closures": ("""
        def make_counter():
            count = 0

            def bump(by=1):
                nonlocal count
                count += by
                return count

            return bump


        bump = make_counter()


        def logged(fn):
            def inner(*args, **kwargs):
                return fn(*args, **kwargs)

            return inner
    """, """
        bump()
        square = logged(lambda v: v * v)
        shapes = [tuple(t.shape) for t in tensors]
        gen = (len(s) for s in shapes)
        print(square(3), sum(gen), {i: s for i, s in enumerate(shapes)}, sorted(shapes, key=lambda s: len(s)))
    """),
    "math": ("import math\n", """
        for t in tensors:
            d = t.shape[-1] if t.dim() else 1
            print(math.sqrt(d), math.log(d + 1), math.prod(t.shape), math.isclose(1.0, 1.0 + 1e-12),
                  math.inf > d, math.pi, math.exp(-d), math.isfinite(d))
    """),
    "numpy-round-trip": ("import numpy as np\n", """
        for t in tensors:
            if t.device.type == "meta":
                continue
            plain = t.detach().cpu()
            a = (plain.float() if plain.dtype in (torch.bfloat16, torch.float16) else plain).numpy()
            back = torch.from_numpy(a.copy())
            np.testing.assert_array_equal(back.numpy(), a)
            torch.as_tensor(np.asarray(a)), np.asarray(plain.to(torch.float64)).mean() if a.size else None
            print(a.shape, a.dtype, np.round(a.astype(np.float64).sum(), 3))
    """),
    "manual-seed": ("torch.manual_seed(1234)\n", """
        g = torch.Generator().manual_seed(0)
        print(torch.randn(3, generator=g))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(5)
            print(torch.rand(2))
    """),
    "no-grad": ("""
        @torch.no_grad()
        def norm_of(t):
            return t.double().norm()
    """, """
        for t in tensors:
            if t.is_floating_point():
                with torch.no_grad():
                    peak = t.abs().max() if t.numel() else None
                print(peak, norm_of(t) if t.device.type != "meta" else None)
        with torch.enable_grad():
            torch.zeros(1, requires_grad=True).sum()
    """),
    "inference-mode": ("", """
        with torch.inference_mode():
            for t in tensors:
                if t.is_floating_point():
                    print((t.detach() * 2).mean() if t.numel() else t)
    """),
    "einsum": ("", """
        for t in tensors:
            if t.is_floating_point() and t.numel():
                v = t.detach().flatten()[:16]
                print(torch.einsum("i,i->", v, v), torch.einsum("i,j->ij", v, v).shape)
                if t.dim() >= 2:
                    print(torch.einsum("...ij->...ji", t).shape)
    """),
    "constants": ("""
        D_MODEL_DEBUG = 512
        EPSILON: float = 1e-9
        NAMES = ("pre", "post")
        DEBUG_DTYPES = {torch.float32: "single", torch.float64: "double"}
    """, """
        for t in tensors:
            print(DEBUG_DTYPES.get(t.dtype, "other"), D_MODEL_DEBUG, EPSILON, NAMES[0])
    """),
    "type-hints": ("""
        from typing import Callable, Optional, Sequence, Union


        def typed(t: torch.Tensor, scale: Optional[float] = None, *, dims: Sequence[int] = (),
                  cb: Callable[[torch.Tensor], torch.Tensor] | None = None) -> Union[torch.Tensor, float]:
            return t if scale is None else scale


        shape_hint: tuple[int, ...] = (1, 2)
    """, """
        import typing

        for t in tensors:
            typed(t, dims=[0])
        print(typing.get_type_hints(typed), typed.__annotations__)
    """),
    "dunder-all": ("__all__ = [name for name in dir() if not name.startswith('_')]\n", """
        print(len(__all__))
    """),
    "timing": ("import time\n", """
        start = time.perf_counter()
        print(f"took {time.perf_counter() - start:.6f} s", time.time() > 0, time.monotonic() > 0)
    """),
    "stderr": ("import sys\n", """
        for t in tensors:
            print("to stderr:", t, file=sys.stderr)
        sys.stdout.write("written\\n")
        sys.stdout.flush()
    """),
    "torch-fx": ("""
        import torch.fx


        def _fx_affine(t):
            return t * 2 + 1


        _FX_AFFINE = torch.fx.symbolic_trace(_fx_affine)
        print(_FX_AFFINE.code)
    """, """
        for t in tensors:
            if t.is_floating_point():
                print(_FX_AFFINE(t).shape)
    """),
    "sympy": ("""
        import sympy

        _d = sympy.Symbol("d", positive=True)
        _INVERSE_ROOT = sympy.lambdify(_d, 1 / sympy.sqrt(_d))
        print(sympy.simplify(sympy.sqrt(_d) ** 2), sympy.diff(sympy.sqrt(_d), _d))
    """, """
        for t in tensors:
            print(_INVERSE_ROOT(max(1, t.shape[-1] if t.dim() else 1)))
    """),
    "subprocess": ("""
        import subprocess
        import sys

        _ANSWER = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True,
                                 check=True).stdout
        print("a process of mine says", _ANSWER.strip(), subprocess.run(["true"]).returncode)
    """, "pass\n"),
    "temporary-files": ("""
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as _folder:
            torch.save({"w": torch.arange(4.0)}, os.path.join(_folder, "saved.pt"))
            print(torch.load(os.path.join(_folder, "saved.pt"), weights_only=True))
    """, """
        import io

        for t in tensors[:1]:
            if t.device.type != "meta":
                buffer = io.BytesIO()
                torch.save(t.detach(), buffer)
                buffer.seek(0)
                print(torch.load(buffer, weights_only=True).shape)
    """),
}

WRAPPER = '''

def _legit_tensors(value, depth=0):
    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 2 and isinstance(value, (tuple, list)):
        return [t for v in value for t in _legit_tensors(v, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [t for v in value.values() for t in _legit_tensors(v, depth + 1)]
    return []


_legit_calls = {}


def _legit_wrap(fn, label):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        calls = _legit_calls[label] = _legit_calls.get(label, 0) + 1
        if calls <= EVERY_CALL or calls % SAMPLE == 0:
            tensors = _legit_tensors((args, kwargs, result))
            for behave in _LEGIT_BEHAVIOURS:
                behave(tensors, result)
        return result

    return wrapper


for _name, _value in list(globals().items()):
    if _name.startswith("_") or getattr(_value, "__module__", None) != __name__ or _name in _LEGIT_OWN:
        continue
    if isinstance(_value, type):
        for _attr, _member in list(vars(_value).items()):
            if not _attr.startswith("_") and callable(_member) and not isinstance(_member, type):
                setattr(_value, _attr, _legit_wrap(_member, f"{_name}.{_attr}"))
    elif callable(_value):
        globals()[_name] = _legit_wrap(_value, _name)
'''


def fragment(names) -> str:
    """The behaviours `names` as code to append to a kata's reference solution."""
    parts = ["\n\n# ---- legitimate behaviours (tests/test_legitimate_code.py) ----\n"
             f"import torch\nEVERY_CALL = {EVERY_CALL}\nSAMPLE = {SAMPLE}\n_LEGIT_BEFORE = set(globals())\n"]
    functions = []
    for name in names:
        module_code, call_code = BEHAVIOURS[name]
        function = "_legit_" + name.replace("-", "_")
        parts.append(f"\n# behaviour: {name}\n{textwrap.dedent(module_code)}\n\n"
                     f"def {function}(tensors, result):\n{textwrap.indent(textwrap.dedent(call_code), '    ')}\n")
        functions.append(function)
    parts.append(f"\n_LEGIT_BEHAVIOURS = [{', '.join(functions)}]\n"
                 "_LEGIT_OWN = set(globals()) - _LEGIT_BEFORE\n" + WRAPPER)
    return "".join(parts)


def grade(course, kata, names, tmp_path):
    path = tmp_path / f"{kata.id}-{len(names)}.py"
    path.write_text(kata.solution.read_text(encoding="utf-8").rstrip() + "\n" + fragment(names), encoding="utf-8")
    return runner.run_kata(course, kata, path, timeout=TIMEOUT)


def verdict(result) -> str:
    failing = [f"{c.title}: {c.message[:300]}" for c in result.checks if not c.passed]
    return f"{result.outcome}, {result.points}/{result.max_points}: {result.message[:300]} {failing[:3]}"


def test_the_corpus_is_large_enough():
    assert len(BEHAVIOURS) >= 25


def test_every_behaviour_runs_inside_the_graded_calls(course, tmp_path):
    """The fragment really wraps the kata's callables: a behaviour that raises fails the kata."""
    kata = course.find("9.1")
    BEHAVIOURS["raises"] = ("", "raise RuntimeError('behaviour ran')\n")
    try:
        result = grade(course, kata, ["raises"], tmp_path)
    finally:
        del BEHAVIOURS["raises"]
    assert result.outcome == runner.FAILED and result.points < result.max_points, verdict(result)
    assert any("behaviour ran" in c.message for c in result.checks), verdict(result)


def test_torch_compile_works(course, tmp_path):
    """`torch.compile` generates code, writes it to /tmp and compiles it, in worker processes: all of it inside
    the walls of the student's process, and the compiled softmax gets full marks. (dynamic=True: one graph for the
    checks' many shapes, where the default compiles again for each, about 6 s more of the same work.)"""
    kata = course.find("9.1")
    path = tmp_path / "compiled.py"
    path.write_text(kata.solution.read_text(encoding="utf-8").replace("def softmax(",
                                                                      "@torch.compile(dynamic=True)\ndef softmax("),
                    encoding="utf-8")
    result = runner.run_kata(course, kata, path, timeout=TIMEOUT)
    assert result.passed and result.points == result.max_points, verdict(result)


@pytest.mark.parametrize("kata_id", ["9.1", "9.2", "9.3", "9.4", "9.5", "9.6", "9.7", "9.8", "9.9", "9.10"])
def test_legitimate_code_gets_full_marks(course, tmp_path, kata_id):
    kata = course.find(kata_id)
    result = grade(course, kata, list(BEHAVIOURS), tmp_path)
    if result.passed and result.points == result.max_points:
        return
    broken: dict[str, str] = {}
    culprits(course, kata, list(BEHAVIOURS), tmp_path, broken)
    pytest.fail(f"kata {kata_id} with every behaviour: {verdict(result)}\nthe behaviours that break it: {broken}")


def culprits(course, kata, names, tmp_path, broken) -> None:
    """Bisect a failing set of behaviours: each one that fails alone goes into `broken`, with its verdict
    (a few gradings per culprit instead of one per behaviour)."""
    if len(names) == 1:
        result = grade(course, kata, names, tmp_path)
        if not (result.passed and result.points == result.max_points):
            broken[names[0]] = verdict(result)
        return
    for half in (names[:len(names) // 2], names[len(names) // 2:]):
        result = grade(course, kata, half, tmp_path) if len(half) > 1 else None
        if result is None or not (result.passed and result.points == result.max_points):
            culprits(course, kata, half, tmp_path, broken)
