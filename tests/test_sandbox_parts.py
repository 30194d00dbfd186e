"""The grading sandbox's parts, each on its own (`kata.grading.sandbox`, the builders `_make_hook` composes).

The end-to-end behaviour (malicious exercises graded for real) is in test_tamper.py and test_isolation.py;
here each builder is called directly, without an audit hook, except the dispatcher: an audit hook cannot
be removed, so it is installed in a subprocess.
"""

from __future__ import annotations

import dis
import gc
import json
import os
import subprocess
import sys
import sysconfig
import types
from pathlib import Path

import pytest

from kata.grading import protocol, sandbox

KEY = b"k" * 32
BUILDERS = ("_make_hook", "_exact_str_keys", "_results_writer", "_who_is_running", "_seal", "_function_mode",
            "_refusal", "_reference_guard", "_markers", "_path_policy", "_plugin_commands", "_system_routes",
            "_dispatcher")


LOOKUPS = ("LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME")


def nested_code(code: types.CodeType):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from nested_code(const)


def test_no_closure_of_the_hook_looks_up_a_global_or_imports():
    """The closure discipline: what the hook's closures use was captured when they were built, so the
    student's code rebinding a module attribute or a builtin changes nothing in them."""
    lookups = {}
    for builder in BUILDERS:
        for code in nested_code(getattr(sandbox, builder).__code__):
            names = {i.argval for i in dis.get_instructions(code) if i.opname in LOOKUPS}
            if names:
                lookups[f"{builder}.{code.co_name}"] = sorted(names)
    assert lookups == {}


# --------------------------------------------------------------------------------------------------
# (a) The results writer


def written(write_records, key):
    """What `write_records(parts)` writes through a results writer on a pipe, as raw bytes."""
    read_end, write_end = os.pipe()
    try:
        parts = sandbox._results_writer(key, write_end)
        write_records(parts)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        return pipe.read()


def test_the_writer_signs_records_that_the_protocol_verifies_in_sequence():
    class Version(str):
        def __str__(self):
            raise AssertionError("a subclass's method ran in the writer")

    def records(parts):
        parts.write("session", {"torch": Version("2.5"), "seconds": float("nan"), "nested": [(1, 2.5), {"a": None}]})
        parts.tamper("your code changed torch.exp", ("/x/exercise.py", 3))
        parts.tamper("your code changed torch.exp", ("/x/exercise.py", 4))  # reported once
        parts.write("end", {"ok": True})

    stream = protocol.verify_lines(written(records, KEY), KEY)
    assert stream.problems == []
    assert [(e["event"], e["seq"]) for e in stream.events] == [("session", 0), ("tamper", 1), ("end", 2)]
    assert stream.events[0]["torch"] == "2.5" and stream.events[0]["seconds"] is None
    assert stream.events[0]["nested"] == [[1, 2.5], {"a": None}]
    assert stream.events[1] == {"event": "tamper", "seq": 1, "message": "your code changed torch.exp",
                                "file": "/x/exercise.py", "line": 3}


def test_a_record_changed_after_signing_is_rejected():
    data = written(lambda parts: parts.write("check", {"status": "failed"}), KEY)
    forged = data.replace(b'"failed"', b'"passed"')
    assert protocol.verify_lines(data, KEY).problems == []
    assert protocol.verify_lines(forged, KEY).problems == ["a line of the results was not written by the graders"]
    assert protocol.verify_lines(data, b"another key").problems


def test_without_a_key_records_are_unsigned():
    data = written(lambda parts: parts.write("check", {"status": "passed"}), None)
    assert b"\t" not in data
    assert protocol.verify_lines(data, None).events == [{"status": "passed", "event": "check", "seq": 0}]


def test_the_writer_knows_its_channel_as_a_file(tmp_path):
    with open(tmp_path / "results", "wb") as f:
        st = os.fstat(f.fileno())
        assert sandbox._results_writer(None, f.fileno()).channel == (st.st_dev, st.st_ino)


# --------------------------------------------------------------------------------------------------
# (b) Who is running


@pytest.fixture
def layout(tmp_path):
    library = str(Path(os.__file__).resolve().parent) + os.sep
    course = tmp_path / "course"
    return types.SimpleNamespace(
        library=library, student=str(course / "exercises" / "9.1-softmax" / "exercise.py"),
        other_exercise=str(course / "exercises" / "9.2-layer-norm" / "exercise.py"),
        reference=str(course / "solutions" / "9.1-softmax" / "solution.py"),
        grader=str(course / "graders" / "9.1-softmax" / "test_softmax.py"),
        config={"student_files": [str(course / "exercises" / "9.1-softmax" / "exercise.py")],
                "reference_files": [str(course / "solutions" / "9.1-softmax" / "solution.py")],
                "trusted": (library, sandbox._KATA_DIR, str(course / "graders") + os.sep,
                            str(course / "solutions") + os.sep),
                "untrusted": (str(course / "exercises") + os.sep,), "library": (library,)})


def run_as(filename: str, function_body: str, namespace: dict | None = None):
    """Call a function compiled as if it were in `filename`; its body sees `here`, its own frame."""
    namespace = {"sys": sys} if namespace is None else namespace
    source = "def probe(check):\n    here = sys._getframe()\n" + function_body
    exec(compile(source, filename, "exec"), namespace)
    return namespace["probe"]


def test_classification_tells_the_student_file_from_library_and_other_code(layout):
    who = sandbox._who_is_running(sandbox._KATA_DIR)
    assert who.classify(layout.student) == sandbox._TRUSTED_CODE  # not configured yet: everything is trusted
    who.configure(layout.config)
    assert who.classify(layout.student) == sandbox._STUDENT_CODE
    assert who.classify(layout.library + "json/__init__.py") == sandbox._TRUSTED_CODE
    assert who.classify(sandbox.__file__) == sandbox._TRUSTED_CODE
    assert who.classify(layout.grader) == sandbox._TRUSTED_CODE
    assert who.classify(layout.reference) == sandbox._REFERENCE_CODE
    assert who.classify(layout.other_exercise) == sandbox._OTHER_CODE
    assert who.classify("/somewhere/else.py") == sandbox._OTHER_CODE
    assert who.classify("<frozen importlib._bootstrap>") == sandbox._TRUSTED_CODE


def test_the_stack_is_read_frame_by_frame(layout):
    who = sandbox._who_is_running(sandbox._KATA_DIR)
    who.configure({**layout.config, "trusted": (os.sep,)})  # pytest and this file count as trusted here
    student = run_as(layout.student, "    return check(here)\n")
    grader = run_as(layout.grader, "    return student(check)\n", {"sys": sys, "student": student})
    assert not who.student_on_stack(sys._getframe())
    assert grader(who.student_on_stack)
    assert grader(who.student_where) == (layout.student, 3)
    assert grader(lambda frame: who.first_outside_library(frame) is frame)
    assert who.student_where(sys._getframe()) is None
    assert not who.in_kata(sys._getframe()) and not who.in_kata(None)


def test_a_registered_namespace_is_the_students_whatever_its_file(layout):
    who = sandbox._who_is_running(sandbox._KATA_DIR)
    who.configure(layout.config)
    namespace = {"sys": sys}
    who.register(namespace, sandbox._STUDENT_CODE)
    disguised = run_as(layout.library + "json/decoder.py", "    return check(here)\n", namespace)
    assert disguised(who.kind_of) == sandbox._STUDENT_CODE
    assert disguised(who.student_on_stack)


# --------------------------------------------------------------------------------------------------
# (c) The seal


def sealed_module(name="kata_graders_fake"):
    module = types.ModuleType(name)
    exec("def helper(x):\n    return x\n\nclass Checker:\n    def run(self):\n        return 1\n\ncache = {}\n",
         module.__dict__)
    reports = []
    seal = sandbox._seal(lambda message, where=None: reports.append(message))
    return module, seal, reports


def test_the_seal_detects_a_rebound_function():
    module, seal, reports = sealed_module()
    assert seal.check("full")  # nothing taken: nothing to verify
    seal.take([(module.__name__, module)], frozenset(), None)
    assert seal.check("full") and seal.check("core") and reports == []
    original = module.helper
    module.helper = lambda x: x
    assert not seal.check("full")
    assert "kata_graders_fake.helper" in reports[0]
    module.helper = original
    assert seal.check("full")


def test_the_seal_detects_a_replaced_method_and_allows_data_to_change():
    module, seal, reports = sealed_module()
    seal.take([(module.__name__, module)], frozenset(), None)
    module.cache["x"] = 1  # data of a module that is not strict: a cache may fill
    assert seal.check("full")
    module.Checker.run = lambda self: 2
    assert not seal.check("full")
    assert "kata_graders_fake.Checker.run" in reports[0]


def test_a_graders_module_is_sealed_whole_and_in_the_core():
    module, seal, reports = sealed_module()
    seal.take([(module.__name__, module)], frozenset({module.__name__}), None)
    module.cache["x"] = 1  # a grader's data is what it compares against
    assert not seal.check("core")
    assert "kata_graders_fake.cache" in reports[0]


def test_the_seal_holds_what_is_bound_in_it_and_behind_it():
    module, seal, _ = sealed_module()
    assert not seal.holds(module.helper)
    seal.take([(module.__name__, module)], frozenset(), None)
    assert seal.holds(module) and seal.holds(module.helper) and seal.holds(module.Checker)
    assert seal.holds(module.Checker.__dict__["run"])
    assert not seal.holds(lambda: None)


def test_the_seal_verifies_what_a_caller_can_reach():
    module, seal, reports = sealed_module()
    seal.take([(module.__name__, module)], frozenset(), None)
    caller = run_as("/x/test_caller.py", "    return check(here)\n", {"sys": sys, "graders": module})
    module.helper = len
    assert caller(lambda frame: seal.check("caller", None, frame))  # `graders` is not a name it uses
    uses = run_as("/x/test_caller.py", "    graders\n    return check(here)\n", {"sys": sys, "graders": module})
    assert not uses(lambda frame: seal.check("caller", None, frame))
    assert "kata_graders_fake.helper" in reports[0]


def test_the_seal_detects_a_changed_default_dtype():
    module, seal, reports = sealed_module()
    dtype = ["float32"]
    seal.take([(module.__name__, module)], frozenset(), lambda: dtype[0])
    assert seal.check("core")
    dtype[0] = "float64"
    assert not seal.check("core") and "torch.set_default_dtype" in reports[0]


def test_every_change_of_a_dict_gives_it_a_new_version_tag():
    """What lets a zygote's units seal cheaply: on CPython 3.11 to 3.13, a dict's version tag is new after
    every change, however it is made (a module attribute stored in a loop, a class attribute, an update)."""
    version = sandbox._dict_versions()
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13) \
            or hasattr(sys, "gettotalrefcount") or sysconfig.get_config_var("Py_GIL_DISABLED"):
        assert version is None
        return
    assert version is not None
    module, _, _ = sealed_module()
    namespace, klass = module.__dict__, gc.get_referents(module.Checker.__dict__)[0]
    tags = []

    def changed(change, mapping) -> bool:
        before = version(mapping).value
        change()
        tags.append(version(mapping).value)
        return tags[-1] != before

    def store_in_a_loop():
        for i in range(50):  # the interpreter specialises the store after a few rounds
            module.counter = i

    assert changed(store_in_a_loop, namespace)
    assert changed(lambda: setattr(module.Checker, "run", lambda self: 3), klass)
    assert changed(lambda: namespace.update(extra=1), namespace)
    assert changed(lambda: namespace.pop("extra"), namespace)
    assert changed(lambda: delattr(module.Checker, "run"), klass)
    assert tags == sorted(set(tags))  # one counter for all dicts: a tag never comes back
    before = version(namespace).value
    assert namespace["helper"] is module.helper and version(namespace).value == before  # reading changes nothing


def fake_module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(source, module.__dict__)
    return module


def zygote_base(*modules) -> types.SimpleNamespace:
    """What a zygote's seal of `modules` gives the units it forks (`sandbox.prepare_seal`)."""
    if sandbox._dict_versions() is None:
        pytest.skip("this interpreter's dicts carry no version tags: units seal as cold children do")
    zygote = sandbox._seal(None)
    zygote.take([(module.__name__, module) for module in modules], frozenset(), None)
    return zygote.export()


def test_a_seal_started_from_a_zygotes_takes_what_changed_since_and_verifies_as_a_fresh_one():
    module, _, _ = sealed_module()
    strict = fake_module("kata.fake_strict", "registry = []\nlimit = 3\n")
    base = zygote_base(module, strict)
    # Between the zygote's seal and the unit's: the graders' imports may change what is loaded, legitimately.
    module.helper = lambda x: -x
    exec("class Added:\n    def run(self):\n        return 1\n", module.__dict__)
    strict.registry.append("grader")
    later = fake_module("kata_graders_later", "def check():\n    return 1\n")
    reports = []
    seal = sandbox._seal(lambda message, where=None: reports.append(message), base)
    seal.take([(module.__name__, module), (strict.__name__, strict), (later.__name__, later)],
              frozenset({later.__name__}), None)
    assert seal.check("full") and seal.check("core") and reports == []
    assert seal.holds(module.helper) and seal.holds(module.Added) and seal.holds(later.check)

    def caught(change, undo, *labels) -> None:
        reports.clear()
        change()
        assert not seal.check("full"), labels
        assert all(label in reports[0] for label in labels), reports
        undo()
        assert seal.check("full"), reports

    helper = module.helper
    caught(lambda: setattr(module, "helper", len), lambda: setattr(module, "helper", helper),
           "kata_graders_fake.helper")
    run = module.Added.run
    caught(lambda: setattr(module.Added, "run", len), lambda: setattr(module.Added, "run", run), "Added.run")
    check = later.check
    caught(lambda: setattr(later, "check", len), lambda: setattr(later, "check", check), "kata_graders_later.check")
    caught(lambda: strict.registry.append("student"), strict.registry.pop, "kata.fake_strict.registry")

    def touch_and_restore():  # the namespace's tag changes, its content does not: its containers are still looked at
        strict.registry.append("student")
        strict.limit = 4
        strict.limit = 3

    caught(touch_and_restore, strict.registry.pop, "kata.fake_strict.registry")


def test_a_seal_takes_everything_afresh_when_a_module_its_base_holds_is_gone():
    module, _, reports = sealed_module()
    other = fake_module("kata_graders_other", "def check():\n    return 1\n")
    seal = sandbox._seal(lambda message, where=None: reports.append(message), zygote_base(module, other))
    seal.take([(other.__name__, other)], frozenset(), None)
    module.helper = len  # no longer loaded: no longer sealed
    assert seal.check("full") and not seal.holds(module.Checker)
    other.check = len
    assert not seal.check("full") and "kata_graders_other.check" in reports[0]


# --------------------------------------------------------------------------------------------------
# The forbidden-built-in mode, the reference


def test_the_function_mode_is_pushed_and_popped_and_a_foreign_one_reported():
    stack, reports = [], []
    mode = sandbox._function_mode(lambda message, where=None: reports.append(message))
    mode.push()  # not armed: nothing is forbidden
    assert stack == []
    mode.arm(("forbid", stack.append, stack.pop, stack.__len__))
    mode.push()
    assert stack == ["forbid"]
    mode.pop()
    assert stack == [] and reports == []
    mode.push()
    stack[-1] = "the student's"
    mode.clear()
    assert stack == ["the student's"] and "function mode stack" in reports[0]


def test_a_students_name_bound_to_the_reference_is_reported(layout):
    who = sandbox._who_is_running(sandbox._KATA_DIR)
    reports = []
    tamper = lambda message, where=None: reports.append(message)  # noqa: E731
    guard = sandbox._reference_guard(who, tamper, sandbox._refusal(who.student_where, tamper))
    reference = types.ModuleType("kata_reference_softmax")
    exec("def softmax(x, dim=-1):\n    return x\n", reference.__dict__)
    guard.store(reference, [reference.softmax.__code__], [])
    assert guard.fetch() is reference
    student = types.ModuleType("exercise")
    exec("def softmax(x, dim=-1):\n    return x\n", student.__dict__)
    guard.note_student_module(student)
    guard.check_student_module()
    assert reports == []
    student.softmax = reference.softmax
    guard.check_student_module()
    assert reports == ["your softmax is the reference solution's, not your own code"]


# --------------------------------------------------------------------------------------------------
# (d) The path policy


@pytest.fixture
def policy(tmp_path):
    graders = tmp_path / "course" / "graders"
    (graders / "9.1-softmax").mkdir(parents=True)
    grader = graders / "9.1-softmax" / "test_softmax.py"
    grader.write_text("# hidden\n")
    progress = tmp_path / "course" / ".kata-progress.json"
    progress.write_text("{}")
    results = tmp_path / "results"
    results.write_text("")
    st = results.stat()
    config = {"protected_files": [str(grader)], "protected_dirs": [str(graders), str(graders / "9.1-softmax")],
              "protected_prefixes": (str(graders) + os.sep,), "progress_files": (str(progress),),
              "writable_blocked": (str(graders) + os.sep, sandbox._KATA_DIR)}
    return types.SimpleNamespace(paths=sandbox._path_policy(config, (st.st_dev, st.st_ino)), grader=grader,
                                 graders=graders, progress=progress, results=results, tmp=tmp_path)


def test_the_path_policy_refuses_a_grader_path_and_allows_tmp(policy):
    why, message, report = policy.paths.open_refusal((str(policy.grader), "r", 0))
    assert (why, report) == ("hidden", True) and "the graders and the reference solution are hidden" in message
    assert policy.paths.open_refusal((Path(policy.grader), "r", 0))[0] == "hidden"  # pathlib's own types
    assert policy.paths.open_refusal((str(policy.tmp / "notes.txt"), "w", 0)) is None
    assert policy.paths.open_refusal((str(policy.tmp / "notes.txt").encode(), "r", 0)) is None


def test_a_hidden_file_is_hidden_under_any_name(policy):
    link = policy.tmp / "innocent.txt"
    link.symlink_to(policy.grader)
    assert policy.paths.open_refusal((str(link), "r", 0))[0] == "hidden"
    with open(policy.grader) as f:  # an open descriptor of it
        assert policy.paths.open_refusal((f.fileno(), "r", 0))[0] == "hidden"


def test_the_progress_file_the_results_and_proc_are_off_limits(policy):
    assert policy.paths.open_refusal((str(policy.progress), "r", 0))[0] == "progress"
    assert policy.paths.open_refusal((str(policy.results), "a", 0))[0] == "results"
    assert policy.paths.open_refusal(("/proc/self/maps", "r", 0))[0] == "proc"


def test_a_path_of_an_unknown_type_is_refused_unreported(policy):
    class Sneaky:
        def __fspath__(self):
            return "/tmp/x"

    assert policy.paths.open_refusal((Sneaky(), "r", 0)) == (
        "unknown", "open() takes a str, bytes or pathlib path while your code is graded", False)


def test_writes_may_create_no_python_file_nor_shared_memory(policy):
    assert policy.paths.open_refusal((str(policy.tmp / "plugin.py"), "w", 0))[0] == "code"
    assert policy.paths.open_refusal((str(policy.tmp / "plugin.py"), None, os.O_WRONLY | os.O_CREAT))[0] == "code"
    assert policy.paths.open_refusal((str(policy.tmp / "plugin.py"), "r", 0)) is None
    assert policy.paths.open_refusal((sandbox._KATA_DIR + "notes.txt", "a", 0))[0] == "code"
    assert policy.paths.open_refusal(("/dev/shm/big", "wb", 0))[0] == "shared-memory"


def test_listings_and_changes_of_hidden_paths_are_refused(policy):
    assert "listing" in policy.paths.listing_refusal((str(policy.graders),))
    assert policy.paths.listing_refusal((str(policy.tmp),)) is None
    message, report = policy.paths.change_refusal("os.remove", (str(policy.grader),))
    assert report and message.startswith("os.remove on ")
    assert policy.paths.change_refusal("os.rename", (str(policy.tmp / "a"), str(policy.tmp / "b.py")))[1]
    assert policy.paths.change_refusal("os.remove", (str(policy.tmp / "notes.txt"),)) is None
    assert policy.paths.change_refusal("os.symlink", (str(policy.tmp / "a"), str(policy.tmp / "b")))[1] is False


# --------------------------------------------------------------------------------------------------
# The system's routes


def test_the_routes_run_no_method_of_an_events_arguments(layout, policy):
    """The student's code can raise any event with arguments of its own: their methods must not run while
    the hook looks away (a str subclass's __hash__ could search every object for the hook's)."""
    ran = []

    class Name(str):
        def __hash__(self):
            ran.append("__hash__")
            return str.__hash__(self)

        def __eq__(self, other):
            ran.append("__eq__")
            return str.__eq__(self, other)

    class Pid(int):
        def __eq__(self, other):
            ran.append("__eq__")
            return True

    who = sandbox._who_is_running(sandbox._KATA_DIR)
    who.configure(layout.config)
    reports = []
    tamper = lambda message, where=None: reports.append(message)  # noqa: E731
    deny = sandbox._refusal(who.student_where, tamper)
    seal, mode = sandbox._seal(tamper), sandbox._function_mode(tamper)
    markers = sandbox._markers(who, seal, mode, sandbox._reference_guard(who, tamper, deny), deny)
    routes = sandbox._system_routes(who, policy.paths, seal, markers, deny)
    student = run_as(layout.student, "    return check(here)\n")

    with pytest.raises(PermissionError, match="reading tb_frame is not allowed"):
        student(lambda frame: routes["object.__getattr__"]("object.__getattr__", (None, Name("tb_frame")), frame))
    with pytest.raises(PermissionError, match="importing posix anew"):
        student(lambda frame: routes["import"]("import", (Name("posix"),), frame))
    with pytest.raises(PermissionError, match=r"os\.kill is not allowed"):
        student(lambda frame: routes["os.kill"]("os.kill", (Pid(os.getpid()), 9), frame))
    assert ran == []


# --------------------------------------------------------------------------------------------------
# (e) The dispatcher, installed for real in a child process

DISPATCHER_SCRIPT = """
import json, os, signal, sys
from kata.grading import sandbox

key = bytes.fromhex(sys.argv[1])
read_end, write_end = os.pipe()
sandbox.install(key=key, fd=write_end)
outcomes = {}
for name, event, args in (("result", sandbox.RESULT, ("check", {"status": "passed"})),
                          ("configure", sandbox.CONFIGURE, ({},)),
                          ("tamper", sandbox.TAMPER, ("a report from anyone",))):
    try:
        sys.audit(event, *args)
        outcomes[name] = "accepted"
    except PermissionError as error:
        outcomes[name] = str(error)
with open(os.devnull) as f:  # not configured: no path policy yet
    outcomes["open"] = "accepted"
handler = signal.getsignal(signal.SIGUSR1)
outcomes["handler holds"] = [type(v).__name__ for v in (handler.__closure__ or ()) + handler.__defaults__]
handler(signal.SIGUSR1, object())  # not a frame: ignored
os.kill(os.getpid(), signal.SIGUSR1)  # a sample, once
os.kill(os.getpid(), signal.SIGUSR1)
os.close(write_end)
print(json.dumps({"outcomes": outcomes, "results": os.read(read_end, 1 << 16).decode()}))
"""


def test_the_dispatcher_obeys_the_plugins_commands_from_the_kata_package_only(tmp_path):
    """And the stack signal's handler, anyone's to fetch, holds nothing of the hook's (no key, no writer)."""
    script = tmp_path / "dispatch.py"
    script.write_text(DISPATCHER_SCRIPT)
    done = subprocess.run([sys.executable, str(script), KEY.hex()], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    outcomes = answer["outcomes"]
    assert outcomes["result"] == "kata: kata.result is for the grading plugin only (this attempt is reported)"
    assert outcomes["configure"].startswith("kata: kata.configure is for the grading plugin only")
    assert outcomes["tamper"] == "accepted" and outcomes["open"] == "accepted"
    assert outcomes["handler holds"] == ["builtin_function_or_method", "str"]
    stream = protocol.verify_lines(answer["results"].encode(), KEY)
    assert stream.problems == []
    assert [(e["event"], e.get("message")) for e in stream.events] == [
        ("tamper", "kata.result is for the grading plugin only"),
        ("tamper", "kata.configure is for the grading plugin only"),
        ("tamper", "a report from anyone"), ("stack", None)]
    assert stream.events[-1]["frames"] == []  # no student's file configured
