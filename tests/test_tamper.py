"""Tamper resistance: the checks must be the checks.

Each case is a small malicious exercise for kata 9.1 (9.2 where a class is needed), graded through
the real runner and the real grading child. None may pass, and each must say what happened: most are
"tampered" (the run does not count, the message names what was caught), the rest fail with an error
that names the refused operation, or are refused before anything runs.

The cheating files return `torch.exp(x) / 2`, which is not a softmax: they could only pass if the
tampering worked.
"""

from __future__ import annotations

import json
import sys

import pytest

from kata import outcomes, runner
from kata.grading import protocol
from tests.conftest import CORRECT_SOFTMAX

TIMEOUT = 180  # these tests are about tampering, not time; generous for a loaded CI machine
WRONG = "    return torch.exp(x) / 2\n"


def grade(course, path, kata="9.1"):
    return runner.run_kata(course, course.find(kata), path, timeout=TIMEOUT)


def assert_tampered(result, *words):
    assert result.outcome == runner.TAMPERED, (result.outcome, result.message, result.log[-2000:])
    assert result.outcome != runner.PASSED and result.exit_code == outcomes.EXIT_FAILED
    assert "do not count" in result.message
    for word in words:
        assert word in result.message, result.message


def assert_refused(result, *words):
    """The refused operation failed the checks that reached it, with a message naming it."""
    assert result.outcome in (runner.FAILED, runner.EXCEPTION), (result.outcome, result.message)
    shown = result.message + "".join(c.message for c in result.checks)
    for word in words:
        assert word in shown, shown[:2000]


# ---------------------------------------------------------------------------------------- comparisons


def test_replacing_torch_comparisons_is_tampering(course, softmax_file):
    path = softmax_file("import torch\n"
                        "torch.allclose = lambda *a, **k: True\n"
                        "torch.testing.assert_close = lambda *a, **k: None\n"
                        "torch.equal = lambda *a, **k: True\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "torch.allclose", "torch.equal", "torch.testing.assert_close")


def test_replacing_tensor_operators_is_tampering(course, softmax_file):
    path = softmax_file("import torch\n"
                        "torch.Tensor.__eq__ = lambda self, other: True\n"
                        "torch.Tensor.__le__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)\n"
                        "torch.Tensor.any = lambda self, *a, **k: False\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "torch.Tensor.__eq__", "torch.Tensor.any")


def test_replacing_what_the_graders_compare_against_is_tampering(course, softmax_file):
    # The graders' expected value is torch.softmax(x): make it return the student's output.
    path = softmax_file("import torch\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG + "\n\n"
                        "setattr(torch, ''.join(['soft', 'max']), lambda x, dim=-1, **k: softmax(x, dim))\n")
    assert_tampered(grade(course, path), "torch.softmax")


def test_a_replacement_that_restores_itself_is_caught_when_called(course, softmax_file):
    # Planted through the module's dict during the call, undone by its first use: no state to see
    # after the check, but the replacement is the student's code, and its entry is watched.
    path = softmax_file("import torch\n"
                        "NAME = ''.join(['soft', 'max'])\n\n"
                        "def softmax(x, dim=-1):\n"
                        "    out = torch.exp(x) / 2\n"
                        "    namespace = vars(torch)\n"
                        "    original = namespace[NAME]\n"
                        "    def liar(*args, **kwargs):\n"
                        "        namespace[NAME] = original\n"
                        "        return out\n"
                        "    namespace[NAME] = liar\n"
                        "    return out\n")
    assert_tampered(grade(course, path), "torch.softmax")


def test_a_tensor_subclass_that_overrides_torch_function_is_refused(course, softmax_file):
    path = softmax_file("import torch\n\n"
                        "class Agreeable(torch.Tensor):\n"
                        "    @classmethod\n"
                        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                        "        return torch.tensor(False)\n\n"
                        "def softmax(x, dim=-1):\n"
                        "    return (torch.exp(x) / 2).as_subclass(Agreeable)\n")
    result = grade(course, path)
    assert_tampered(result, "__torch_function__")


def test_comparisons_do_not_use_what_student_code_can_replace(monkeypatch):
    """In-process: the verdict of assert_close survives torch's comparison functions being replaced."""
    import torch

    from kata.toolkit.compare import CheckFailed, assert_close, is_close

    actual, expected = torch.zeros(3), torch.ones(3)
    for name, fake in (("allclose", lambda *a, **k: True), ("equal", lambda *a, **k: True),
                       ("isnan", lambda t: torch.ones_like(t, dtype=torch.bool)),
                       ("le", lambda *a, **k: torch.tensor(True))):
        monkeypatch.setattr(torch, name, fake)
    monkeypatch.setattr(torch.Tensor, "__le__", lambda self, other: torch.ones(self.shape, dtype=torch.bool))
    monkeypatch.setattr(torch.Tensor, "any", lambda self, *a, **k: torch.tensor(False))
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda self: False)
    with pytest.raises(CheckFailed):
        assert_close(actual, expected)
    assert not is_close(actual, expected)


@pytest.mark.parametrize("how", [
    "functools.update_wrapper(compare.assert_close, loose, assigned=('__kwdefaults__',), updated=())",
    "compare.assert_close.__kwdefaults__ = loose.__kwdefaults__",
    "collections.namedtuple('T', 'a', defaults=(0,))(); "  # allowed: its own new __new__; then not allowed:
    "functools.update_wrapper(compare.assert_close, loose, assigned=('__kwdefaults__',), updated=())",
])
def test_changing_the_defaults_of_a_graders_function_is_tampering(course, softmax_file, how):
    # The standard library may set a function's defaults on the student's behalf (a NamedTuple's), but
    # never on one the graders use, directly or through a library helper.
    path = softmax_file("import collections, functools, torch\nfrom kata.toolkit import compare\n\n"
                        "def loose(actual, expected, *, name='output', what='', context='', rtol=1e9, atol=1e9,\n"
                        "          mistakes=None, check_dtype=False, check_device=False):\n    pass\n\n"
                        f"{how}\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "object.__setattr__")


# ------------------------------------------------------------------------------- pytest, plugin, builtins


def test_patching_pytest_is_tampering(course, softmax_file):
    path = softmax_file("import torch, _pytest.python\n"
                        "_pytest.python.Function.runtest = lambda self: None\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "_pytest.python.Function.runtest")


def test_patching_the_grading_plugin_is_tampering(course, softmax_file):
    path = softmax_file("import torch\nimport kata.grading.plugin as plugin\n"
                        "plugin._classify = lambda report, call: ('passed', '', (), [])\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "kata.grading.plugin._classify")


def test_patching_a_grader_is_tampering(course, softmax_file):
    path = softmax_file("import sys, torch\n"
                        "grader = sys.modules['test_softmax']\n"
                        "grader.assert_close = lambda *a, **k: None\n"
                        "grader.assert_finite = lambda *a, **k: None\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "test_softmax.assert_close")


def test_patching_builtins_is_tampering(course, softmax_file):
    path = softmax_file("import builtins, torch\n"
                        "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
                        "builtins.print = lambda *a, **k: None\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "builtins.AssertionError", "builtins.print")


def test_loading_another_hypothesis_profile_is_tampering(course, softmax_file):
    # One example per property check would let a softmax that fails on most inputs through them.
    path = softmax_file("import torch\nfrom hypothesis import settings\n"
                        "settings.register_profile('lenient', max_examples=1)\n"
                        "settings.load_profile('lenient')\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "hypothesis._settings")


def test_discarding_the_graders_examples_is_tampering(course, softmax_file):
    # What hypothesis.assume(False) raises, raised directly (assume() itself needs a stack frame,
    # which the student's code is not given): every input it would fail on is skipped.
    path = softmax_file("import torch\nfrom hypothesis.errors import UnsatisfiedAssumption\n\n"
                        "def softmax(x, dim=-1):\n"
                        "    if x.dim() > 1:\n        raise UnsatisfiedAssumption()\n" + WRONG)
    assert_tampered(grade(course, path), "hypothesis.assume()")


# -------------------------------------------------------------------------------- forbidden aliases

RUNTIME_ALIASES = {
    "C-level function": "getattr(torch._C._VariableFunctions, NAME)(x, dim)",
    "C-level method": "getattr(torch._C.TensorBase, NAME)(x, dim)",
    "aten operator": "getattr(torch.ops.aten, '_' + NAME).default(x, dim, False)",
    "_VF": "getattr(torch._VF, NAME)(x, dim)",
    "module dict": "torch.nn.functional.__dict__[NAME](x, dim)",
    "the guard's closure": "getattr(torch.nn.functional, NAME).__closure__[-1].cell_contents(x, dim)",
}


@pytest.mark.parametrize("call", RUNTIME_ALIASES.values(), ids=RUNTIME_ALIASES.keys())
def test_forbidden_builtin_through_an_alias_is_caught_at_run_time(course, softmax_file, call):
    path = softmax_file("import torch\nimport torch.nn.functional\n"
                        "NAME = ''.join(['soft', 'max'])\n\n"
                        f"def softmax(x, dim=-1):\n    return {call}\n")
    result = grade(course, path)
    assert result.outcome == runner.FORBIDDEN, (result.outcome, result.message)
    forbidden = [c for c in result.checks if c.status == protocol.FORBIDDEN]
    assert forbidden and "softmax" in forbidden[0].message and f"{path}:6" in forbidden[0].message


STATIC_ALIASES = {
    "C-level function": "torch._C._VariableFunctions.softmax(x, dim)",
    "aten operator": "torch.ops.aten._softmax.default(x, dim, False)",
    "_VF": "torch._VF.softmax(x, dim)",
    "special": "torch.special.softmax(x, dim)",
    "glued name": "getattr(torch, 'soft' + 'max')(x, dim)",
    "f-string": "getattr(torch, f\"{'soft'}max\")(x, dim)",
}


@pytest.mark.parametrize("call", STATIC_ALIASES.values(), ids=STATIC_ALIASES.keys())
def test_forbidden_builtin_through_an_alias_is_refused_before_running(course, softmax_file, call):
    path = softmax_file(f"import torch\n\ndef softmax(x, dim=-1):\n    return {call}\n")
    result = grade(course, path)
    assert result.outcome == runner.FORBIDDEN and not result.checks
    assert "softmax" in result.message and result.frames[0].line == 4
    assert result.torch is None, "read from the source: no grading process started"


# ------------------------------------------------------------------------------- the reference solution


def test_importing_the_reference_through_kata_earlier_is_refused(course, softmax_file):
    result = grade(course, softmax_file("from kata.earlier.softmax import softmax\n"))
    assert result.outcome == runner.IMPORT_ERROR
    assert "only the katas before it are given" in result.message


def test_unlocking_kata_earlier_is_tampering(course, softmax_file):
    path = softmax_file("import os\nos.environ['KATA_CURRENT'] = '9.2'\n"
                        "from kata.earlier.softmax import softmax\n")
    assert_tampered(grade(course, path), "solutions/9.1-softmax", "hidden")


def test_loading_the_reference_by_path_is_tampering(course, softmax_file):
    path = softmax_file("import importlib.util, pathlib\n"
                        "where = pathlib.Path(__file__).parents[2] / 'solutions' / '9.1-softmax' / 'solution.py'\n"
                        "spec = importlib.util.spec_from_file_location('mine', where)\n"
                        "module = importlib.util.module_from_spec(spec)\n"
                        "spec.loader.exec_module(module)\n"
                        "softmax = getattr(module, ''.join(['soft', 'max']))\n")
    assert_tampered(grade(course, path), "solutions/9.1-softmax", "hidden")


def test_the_reference_cannot_be_found_in_the_process(course, softmax_file):
    # Not in sys.modules, not kept by the plugin, and the sandbox hands it out to the graders only.
    path = softmax_file("import sys, torch\nimport kata.grading.plugin as plugin\n"
                        "print('modules:', [n for n in sys.modules if 'kata_reference' in n])\n"
                        "print('plugin:', [n for n in vars(plugin._session) if 'reference' in n])\n"
                        "box = []\n"
                        "sys.audit('kata.fetch-reference', box)\n"
                        "softmax = getattr(box[0], ''.join(['soft', 'max']))\n")
    result = grade(course, path)
    assert_tampered(result, "for the grading plugin only")
    assert "modules: []" in result.output and "plugin: []" in result.output


REACH = """
import collections, sys, types, warnings
import torch
warnings.simplefilter("ignore")
WANTED = {"Config", "Session", "PytestPluginManager", "HookImpl", "HookCaller", "FixtureDef", "Function", "Item"}


def search():
    # Breadth-first from every module, through what needs no frame and no gc: attributes, containers,
    # closures, globals, bound methods.
    seen, found = set(), {}
    queue = collections.deque((m, n) for n, m in list(sys.modules.items()) if m is not None and n != "exercise")
    while queue:
        obj, path = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj)
        if kind.__name__ in WANTED:
            found.setdefault(kind.__name__, path)
        if kind is types.ModuleType and obj.__name__.startswith("kata_reference"):
            found.setdefault("reference", path)
        if kind in (str, bytes, int, float, bool, type(None)):
            continue
        try:
            if kind is dict:
                queue.extend((v, f"{path}[{k!r:.20}]") for k, v in list(obj.items()))
            elif kind in (list, tuple, set, frozenset, collections.deque):
                queue.extend((v, f"{path}[{i}]") for i, v in enumerate(list(obj)))
            namespace = obj.__dict__ if isinstance(obj, type) else object.__getattribute__(obj, "__dict__")
            queue.extend((v, f"{path}.{k}") for k, v in list(namespace.items()))
        except Exception:
            pass
        for attr in ("__closure__", "__self__", "__func__", "__wrapped__", "__globals__", "__defaults__"):
            try:
                value = object.__getattribute__(obj, attr)
            except Exception:
                continue
            if attr == "__closure__" and type(value) is tuple:
                for i, cell in enumerate(value):
                    try:
                        queue.append((cell.cell_contents, f"{path}.<cell {i}>"))
                    except ValueError:
                        pass
            elif value is not None and attr != "__closure__":
                queue.append((value, f"{path}.{attr}"))
    return len(seen), found


SEEN, FOUND = search()
print("searched", SEEN, "found", FOUND)
"""


def test_pytest_internals_and_the_reference_are_out_of_reach(course, softmax_file):
    """The objects that decide a verdict (pytest's config, session, hook implementations, the reference
    module) are not reachable from any module by following attributes, containers and closures."""
    result = grade(course, softmax_file(REACH + CORRECT_SOFTMAX.replace("import torch\n", "")))
    assert result.outcome == runner.PASSED, (result.message, result.log[-1500:])
    line = next(line for line in result.output.splitlines() if line.startswith("searched"))
    assert int(line.split()[1]) > 100_000, line  # the search went through the process
    assert line.endswith("found {}"), line


def test_searching_objects_for_the_reference_fails(course, softmax_file):
    path = softmax_file("import torch\n\n"
                        "def softmax(x, dim=-1):\n"
                        "    import gc\n"
                        "    found = [f for f in gc.get_objects()\n"
                        "             if getattr(f, '__module__', '') == 'kata_reference_softmax']\n"
                        "    return found[0](x, dim)\n")
    result = grade(course, path)
    assert result.outcome != runner.PASSED
    assert_refused(result, "gc.get_objects is not allowed")


def test_reusing_a_reference_class_is_tampering(course, course_root):
    # nn.Module.__subclasses__() lists every module class, the reference solution's among them.
    path = course_root / "exercises" / "9.2-layer-norm" / "exercise.py"
    path.write_text("import torch\n"
                    "found = [c for c in torch.nn.Module.__subclasses__()\n"
                    "         if c.__module__.startswith('kata_reference')]\n"
                    "LayerNorm = found[0]\n"
                    "layer_norm = LayerNorm.forward.__globals__[''.join(['layer', '_norm'])]\n", encoding="utf-8")
    result = grade(course, path, kata="9.2")
    assert_tampered(result, "reference solution")


# ---------------------------------------------------------------------------- the stack and the disk


def test_reading_the_callers_frame_fails(course, softmax_file):
    path = softmax_file("import sys, torch\n\ndef softmax(x, dim=-1):\n"
                        "    expected = sys._getframe(1).f_locals\n" + WRONG)
    assert_refused(grade(course, path), "sys._getframe is not allowed while your code is graded")


def test_inspecting_the_stack_fails(course, softmax_file):
    path = softmax_file("import inspect, torch\n\ndef softmax(x, dim=-1):\n"
                        "    frames = inspect.stack()\n" + WRONG)
    assert_refused(grade(course, path), "is not allowed while your code is graded")


def test_walking_a_traceback_into_the_graders_fails(course, softmax_file):
    path = softmax_file("import torch\n\ndef softmax(x, dim=-1):\n"
                        "    try:\n        raise ValueError\n"
                        "    except ValueError as exc:\n"
                        "        grader = exc.__traceback__.tb_frame.f_back\n" + WRONG)
    assert_refused(grade(course, path), "reading tb_frame is not allowed")


def test_reading_a_grader_file_is_tampering(course, softmax_file):
    path = softmax_file("import pathlib, torch\n"
                        "SOURCE = (pathlib.Path(__file__).parents[2] / 'graders' / '9.1-softmax' / 'test_softmax.py')"
                        ".read_text()\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "test_softmax.py", "hidden")


def test_listing_the_graders_is_tampering(course, softmax_file):
    path = softmax_file("import os, pathlib, torch\n"
                        "FILES = os.listdir(pathlib.Path(__file__).parents[2] / 'graders' / '9.1-softmax')\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "listing", "hidden")


# ---------------------------------------------------------------------------------- exits and kills


def test_sys_exit_in_a_check_does_not_pass(course, softmax_file):
    path = softmax_file("import sys, torch\n\ndef softmax(x, dim=-1):\n    sys.exit(0)\n")
    result = grade(course, path)
    assert result.outcome == runner.FAILED
    assert {c.status for c in result.checks} == {protocol.ERROR}
    assert all(c.message.startswith("SystemExit") for c in result.checks)


def test_os_exit_at_import_is_a_crash(course, softmax_file):
    result = grade(course, softmax_file("import os\nos._exit(0)\n"))
    assert result.outcome == runner.CRASH and result.exit_code == outcomes.EXIT_CRASH
    assert "ended early with exit code 0" in result.message


def test_killing_the_parent_is_refused_and_reported(course, softmax_file):
    path = softmax_file("import os, signal, torch\n\ndef softmax(x, dim=-1):\n"
                        "    os.kill(os.getppid(), signal.SIGKILL)\n" + WRONG)
    assert_tampered(grade(course, path), "os.kill")


def test_stopping_the_session_after_passing_checks_is_a_crash(course, softmax_file):
    # Pass the first calls, then interrupt pytest: the checks that ran all passed, but not all ran.
    body = CORRECT_SOFTMAX.replace("def softmax(x, dim=-1):\n",
                                   "CALLS = [0]\n\ndef softmax(x, dim=-1):\n    CALLS[0] += 1\n"
                                   "    if CALLS[0] > 40:\n        raise KeyboardInterrupt\n")
    result = grade(course, softmax_file(body))
    assert result.outcome == runner.CRASH and result.checks and all(c.passed for c in result.checks)
    assert "stopped after" in result.message and "KeyboardInterrupt" in result.message


def test_pytest_exit_is_a_crash(course, softmax_file):
    path = softmax_file("import pytest, torch\n\ndef softmax(x, dim=-1):\n    pytest.exit('done', returncode=0)\n")
    result = grade(course, path)
    assert result.outcome == runner.CRASH and result.outcome != runner.PASSED


# ---------------------------------------------------------------------------------------- the results


def test_forged_results_are_rejected(course, softmax_file):
    # Write a complete, passing stream to every descriptor the child has, then leave.
    forged = [{"event": "session", "seq": 0, "kata": "9.1", "devices": ["cpu"]},
              {"event": "import", "seq": 1, "status": "ok", "checks": 1},
              {"event": "check", "seq": 2, "id": "x", "title": "x", "status": "passed", "weight": 1.0},
              {"event": "end", "seq": 3, "exitstatus": 0}]
    lines = "".join(json.dumps(r) + "\t" + "0" * 64 + "\n" for r in forged)
    path = softmax_file("import os, torch\n\ndef softmax(x, dim=-1):\n"
                        "    for fd in range(3, 64):\n"
                        "        try:\n"
                        f"            os.write(fd, {lines.encode()!r})\n"
                        "        except OSError:\n"
                        "            pass\n"
                        "    os._exit(0)\n")
    assert_tampered(grade(course, path), "altered")


def test_results_must_be_signed_and_in_sequence():
    key = b"k" * 32

    def line(record, k=key):
        payload = json.dumps(record).encode()
        return payload + b"\t" + protocol.sign(k, payload).encode() + b"\n"

    good = line({"event": "session", "seq": 0}) + line({"event": "end", "seq": 1})
    assert [e["event"] for e in protocol.verify_lines(good, key).events] == ["session", "end"]
    assert not protocol.verify_lines(good, key).problems
    for bad in (line({"event": "session", "seq": 0}, b"x" * 32),  # another key
                b'{"event": "session", "seq": 0}\n',  # unsigned
                line({"event": "session", "seq": 1})):  # out of sequence
        assert protocol.verify_lines(bad, key).problems
    cut = good + b'{"event": "check"'  # a killed child's last line: dropped, not a problem
    assert not protocol.verify_lines(cut, key).problems


# ------------------------------------------------------------------------------------- the progress file


def test_writing_the_progress_file_from_the_checks_is_tampering(course, course_root, softmax_file):
    path = softmax_file("import json, os, torch\n"
                        "with open(os.environ['KATA_PROGRESS'], 'w') as f:\n"
                        "    json.dump({'schema': 1, 'katas': {'9.1': {'status': 'passed'}}}, f)\n\n"
                        "def softmax(x, dim=-1):\n" + WRONG)
    assert_tampered(grade(course, path), "progress file")
    assert not (course_root / ".kata-progress.json").exists()


def test_a_pass_written_by_hand_is_flagged(course, course_root):
    """`kata verify --progress`: a pass must carry the hash of the file that passed."""
    from click.testing import CliRunner

    from kata.cli import main

    progress = course_root / ".kata-progress.json"
    progress.write_text(json.dumps({"schema": 1, "katas": {
        "9.1": {"status": "passed", "attempts": 1, "passed_hash": None},
        "9.2": {"status": "passed", "attempts": 1, "passed_hash": "0" * 64},
    }}), encoding="utf-8")
    result = CliRunner().invoke(main, ["verify", "--progress", "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    by_kata = {k["kata"]: k for k in report["katas"]}
    assert by_kata["9.1"]["verdict"] == "no-proof" and by_kata["9.2"]["verdict"] == "changed"
    assert not report["ok"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and process groups")
def test_a_correct_file_still_passes_with_every_protection_on(course, softmax_file):
    # Dataclasses, named tuples, lambdas, helpers and printing are all fine.
    path = softmax_file("import torch\nfrom collections import namedtuple\nfrom dataclasses import dataclass\n\n"
                        "Pair = namedtuple('Pair', 'a b')\n\n\n"
                        "@dataclass\nclass Options:\n    keepdim: bool = True\n\n\n"
                        "def _shifted(x, dim):\n    return x - x.amax(dim=dim, keepdim=Options().keepdim)\n\n\n"
                        "def softmax(x, dim=-1):\n    e = torch.exp(_shifted(x, dim))\n"
                        "    total = (lambda t: t.sum(dim=dim, keepdim=True))(e)\n"
                        "    Pair(1, 2)\n    return e / total\n")
    result = grade(course, path)
    assert result.outcome == runner.PASSED, [(c.title, c.message) for c in result.checks if not c.passed]
