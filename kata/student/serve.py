"""The student's process: it runs the student's code, and serves the judge's requests about it.

Forked by the judge (`kata.grading.spawn`) before any grader, reference or hidden module is loaded there,
it builds its walls (`kata.student.walls`), says it is ready, then answers one request after another on its
socket (`kata.wire`) until the judge closes it. Objects stay here; the judge holds handles (small numbers)
to them, and values cross by value (`kata.wire.values`). The closed set of requests, each one function
below (`Server.op_*`):

    load      {"source"}: run the student's file as a module; its handle (0)
    getattr   {"target", "name"}: an attribute (a public name) of an object
    setattr   {"target", "name", "value"}: set one (a grader lends its own function: a callback)
    call      {"target", "method", "args", "kwargs", "grad", "watch", "device"}: call an object, or its
              method (with torch's default device set to `device`: a model built on "meta" in no time)
    backward  {"graph", "grads"}: gradients through a call's outputs, back to its inputs (and into
              the parameters here, as `Tensor.backward` does)
    repr      {"target"}: the object's repr, for messages
    earlier   {"module"}: the reference module of an earlier kata (`kata.earlier.<module>`)

Every request may carry `release` (handles and graphs the judge no longer holds) and `seed` (torch's
generators are seeded with it first, as the judge seeds its own for each check). A reply is
`{"id", "ok": true, "value", "output"}` (with `graph` when the call's outputs lead back through
autograd, `changed` with `watch`: the inputs the call changed in place) or
`{"id", "ok": false, "error": {"type", "mro", "message", "frames"}, "output"}`. While the student's code
runs, a function the judge lent it may be called: this side then sends
`{"id", "op": "callback", "callback", "args", "kwargs"}` and serves the judge's requests until that reply
comes. On the stack signal (SIGUSR1: the judge's time ran out) it sends `{"stack": frames}`.

Nothing this process says decides a grade: the judge checks what it answers.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import inspect
import os
import signal
import sys
import types
import warnings
import weakref

import torch

from kata.student import guard, load, walls
from kata.wire.frames import Channel, Closed, WireError
from kata.wire.values import Packer, Unpacker

DUNDER_METHODS = ("__call__", "__iter__", "__len__", "__getitem__", "__contains__", "__bool__")
MESSAGE_LIMIT = 20_000  # characters of an exception's message sent back
REPR_LIMIT = 2000


class CallbackError(Exception):
    """The grader's function that the student's code called raised."""


class Server:
    """The handle table and the requests (see the module's docstring)."""

    def __init__(self, channel: Channel, *, filename: str, output_limit: int, mode=None):
        self.channel, self.filename, self.output_limit, self.mode = channel, filename, output_limit, mode
        self.files = frozenset({filename})
        self.objects: dict[int, object] = {}
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self.graphs: dict[int, tuple[list[torch.Tensor], list[torch.Tensor | None]]] = {}
        self._oids: dict[int, tuple[int, weakref.ref]] = {}
        self._next = {"handle": 1, "graph": 1, "oid": 1, "request": 1}

    # ---- the loop

    def serve(self) -> None:
        """Answer requests until the judge closes its end."""
        while True:
            try:
                header, buffers = self.channel.receive()
            except Closed:
                return
            if "op" not in header:
                raise WireError("a reply where a request was due")
            self.answer(header, buffers)

    def answer(self, header: dict, buffers: list[bytearray]) -> None:
        self._release(header.get("release") or {})
        if type(header.get("seed")) is int:  # the check's seed, as the judge seeds its own generators
            torch.random.default_generator.manual_seed(header["seed"])
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(header["seed"])
        op = getattr(self, f"op_{header['op']}", None) if isinstance(header.get("op"), str) else None
        output = load.CappedStream(self.output_limit)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = output
        reply: dict
        packed: list = []
        try:
            if op is None:
                raise WireError(f"an unknown request {header.get('op')!r}")
            reply, packed = op(header, Unpacker(header.get("tensors", []), buffers, self.resolve, leaves=True))
            reply["ok"] = True
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, pytest's outcomes: the student's code raised
            reply = {"ok": False, "error": self.describe(exc)}
        finally:
            sys.stdout, sys.stderr = saved
        reply["id"], reply["output"] = header.get("id"), output.text()
        self._send(reply, packed)

    def _send(self, reply: dict, packers: list[Packer]) -> None:
        buffers = []
        if packers:
            packer = packers[0]
            reply["tensors"] = packer.tensors
            buffers = packer.buffers
        try:
            self.channel.send(reply, buffers)
        except TypeError as exc:  # a value JSON cannot hold: said as an error instead
            self.channel.send({"id": reply["id"], "ok": False, "output": reply.get("output", ""),
                               "error": {"type": "TypeError", "mro": ["TypeError"], "message": str(exc), "frames": []}})

    def describe(self, exc: BaseException) -> dict:
        message = str(exc)
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        if notes:
            message = "\n".join([message, *notes])
        return {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__],
                "message": message[:MESSAGE_LIMIT], "frames": load.student_frames(exc.__traceback__, self.files)}

    # ---- references

    def refer(self, obj) -> dict:
        if isinstance(obj, Callback) and obj.server is self:
            return {"callback": obj.id}
        handle = self.handles.get(id(obj))
        if handle is None:
            handle = self._next["handle"]
            self._next["handle"] += 1
            self.objects[handle] = obj
            self.handles[id(obj)] = handle
        kind = type(obj)
        name = getattr(obj, "__qualname__", None) if isinstance(obj, (type, types.FunctionType)) else None
        return {"handle": handle, "type": kind.__name__, "mro": [c.__name__ for c in kind.__mro__],
                "callable": callable(obj), "name": name if isinstance(name, str) else kind.__name__}

    def resolve(self, tagged: dict):
        if "handle" in tagged:
            return self._object(tagged["handle"])
        if "method" in tagged:
            return getattr(self._object(tagged.get("of")), _public(tagged["method"]))
        if "callback" in tagged and type(tagged["callback"]) is int:
            return Callback(self, tagged["callback"])
        raise WireError(f"an unknown reference {tagged!r}")

    def _object(self, handle):
        if type(handle) is not int or handle not in self.objects:
            raise WireError(f"no object with handle {handle!r}")
        return self.objects[handle]

    def oid(self, t: torch.Tensor) -> int:
        known = self._oids.get(id(t))
        if known is not None and known[1]() is t:
            return known[0]
        number = self._next["oid"]
        self._next["oid"] += 1
        key = id(t)
        self._oids[key] = (number, weakref.ref(t, lambda _ref, key=key: self._oids.pop(key, None)))
        return number

    def _release(self, release: dict) -> None:
        for handle in release.get("handles", ()):
            obj = self.objects.pop(handle, None)
            if obj is not None:
                self.handles.pop(id(obj), None)
        for graph in release.get("graphs", ()):
            self.graphs.pop(graph, None)

    def packer(self) -> Packer:
        return Packer(self.refer, oids=self.oid)

    def value(self, value) -> tuple[dict, list[Packer]]:
        packer = self.packer()
        packed = packer.pack_iterator(value) if _iterator(value) else packer.pack(value)
        return {"value": packed}, [packer]

    # ---- the requests

    def op_load(self, header, _unpacker):
        source = header.get("source")
        if type(source) is not str:
            raise WireError("load without a source")
        with self._student_code():
            module = load.load_student(source, self.filename)
        return self.value(module)

    def op_getattr(self, header, _unpacker):
        target, name = self._object(header.get("target")), _public(header.get("name"))
        with self._student_code():
            value = getattr(target, name)
        if (inspect.ismethod(value) and value.__self__ is target) or (
                isinstance(value, types.BuiltinMethodType) and getattr(value, "__self__", None) is target):
            return {"value": {"method": name, "of": header["target"]}}, []
        return self.value(value)

    def op_setattr(self, header, unpacker):
        target, name = self._object(header.get("target")), _public(header.get("name"))
        value = unpacker.unpack(header.get("value"))
        with self._student_code():
            setattr(target, name, value)
        return {"value": None}, []

    def op_call(self, header, unpacker):
        target = self._object(header.get("target"))
        method = header.get("method")
        if method is not None:
            target = getattr(target, method if method in DUNDER_METHODS else _public(method))
        args = unpacker.unpack(header.get("args", {"list": []}))
        kwargs = unpacker.unpack(header.get("kwargs", {"dict": []}))
        if type(args) is not list or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
            raise WireError("a call whose arguments are not a list and a dict of names")
        inputs = [unpacker.tensor(row) for row in range(len(unpacker.descriptors))]
        versions = [t._version for t in inputs]
        grad = header.get("grad") is True
        device = torch.device(header["device"]) if isinstance(header.get("device"), str) else contextlib.nullcontext()
        with self._student_code(), torch.set_grad_enabled(grad), device:
            result = target(*args, **kwargs)
            if method == "__iter__" or _iterator(result):
                result = iter(list(result))
        reply, packers = self.value(result)
        outputs = list(packers[0].originals)
        leading = [t for t in outputs if t.requires_grad and t.grad_fn is not None]
        if grad and leading:
            graph = self._next["graph"]
            self._next["graph"] += 1
            self.graphs[graph] = (leading, [t if t.requires_grad else None for t in inputs])
            reply["graph"] = graph
            reply["leading"] = [row for row, t in enumerate(outputs) if t.requires_grad and t.grad_fn is not None]
        if header.get("watch") is True:
            changed = [(row, t) for row, (t, v) in enumerate(zip(inputs, versions, strict=True)) if t._version != v]
            reply["changed"] = [[row, packers[0].pack(t.detach())] for row, t in changed]
        return reply, packers

    def op_backward(self, header, unpacker):
        graph = header.get("graph")
        if graph not in self.graphs:
            raise WireError(f"no graph {graph!r}")
        outputs, leaves = self.graphs[graph]
        grads = unpacker.unpack(header.get("grads"))
        if type(grads) is not list or len(grads) != len(outputs):
            raise WireError("a backward whose gradients do not match the call's outputs")
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if isinstance(g, torch.Tensor)]
        for leaf in leaves:
            if leaf is not None:
                leaf.grad = None
        if pairs:
            # One scalar, sum(output * gradient), whose gradient with respect to each output is exactly the given
            # one: autograd.backward with explicit gradients first imports torch's symbolic shapes (0.4 s).
            total = sum((o * g.to(device=o.device, dtype=o.dtype)).sum() for o, g in pairs)
            with self._student_code():
                total.backward(retain_graph=True)
        return self.value([None if leaf is None else leaf.grad for leaf in leaves])

    def op_repr(self, header, _unpacker):
        with self._student_code():
            text = repr(self._object(header.get("target")))
        return {"value": str(text)[:REPR_LIMIT]}, []

    def op_earlier(self, header, _unpacker):
        name = header.get("module")
        if type(name) is not str or not name.isidentifier():
            raise WireError("earlier without a module name")
        import importlib

        return self.value(importlib.import_module(f"{load.EARLIER}.{name}"))

    # ---- the student's code, and the grader's functions it calls

    def _student_code(self):
        """Where the student's code runs: the forbidden built-ins' mode on (advice), if the kata has one."""
        return self.mode if self.mode is not None else contextlib.nullcontext()

    def call_judge(self, callback: int, args: tuple, kwargs: dict):
        """Call the grader's function `callback` (lent to the student's code) and return what it returns,
        serving the judge's requests meanwhile."""
        number = self._next["request"]
        self._next["request"] += 1
        packer = self.packer()
        header = {"id": number, "op": "callback", "callback": callback, "args": packer.pack(list(args)),
                  "kwargs": packer.pack(dict(kwargs)), "tensors": packer.tensors}
        self.channel.send(header, packer.buffers)
        while True:
            reply, buffers = self.channel.receive()
            if "op" in reply:
                self.answer(reply, buffers)
                continue
            if reply.get("id") != number:
                raise WireError("a reply out of turn")
            if reply.get("ok") is not True:
                raise CallbackError(str(reply.get("message", "the grader's function failed")))
            return Unpacker(reply.get("tensors", []), buffers, self.resolve, leaves=False).unpack(reply.get("value"))


class Callback:
    """A function of the grader's, lent to the student's code: calling it asks the judge to run it."""

    def __init__(self, server: Server, number: int):
        self.server, self.id = server, number

    def __call__(self, *args, **kwargs):
        return self.server.call_judge(self.id, args, kwargs)

    def __repr__(self) -> str:
        return f"<the grader's function {self.id}>"


def show_warning(files: frozenset[str], message, category, filename, lineno, file=None, line=None) -> None:
    """A warning, shown where the student's code caused it: at its own line when it points into the student's
    file, else at the student's innermost line on the stack (torch warning about their `x.var()`, a
    `warnings.warn(..., stacklevel=2)` that points into this module); not at all if no line of theirs is
    on the stack (then it is not theirs). It goes to what the request captures, the student's output."""
    if filename not in files:
        where = load.stack_frames(sys._getframe(1), files)
        if not where:
            return
        filename, lineno, line = where[-1]["file"], where[-1]["line"], None
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def _public(name) -> str:
    if type(name) is not str or not name.isidentifier() or name.startswith("_"):
        raise AttributeError(f"{name!r} is not a public name")
    return name


def _iterator(value) -> bool:
    return isinstance(value, collections.abc.Iterator) and not isinstance(value, (str, bytes, torch.Tensor))


def main(sock, *, filename: str, kata_id: str, forbidden: tuple[str, ...], earlier: dict[str, tuple[str, str]],
         hidden: list[str], memory_mb: int | None, output_limit: int) -> int:
    """The student's process, from the fork on: walls, limits, the given pieces, then serve. Its exit status."""
    report = walls.build(hidden=hidden, keep={sock.fileno()})
    if memory_mb:
        walls.limit_memory(memory_mb)
    os.environ["CUDA_CACHE_DISABLE"] = "1"  # the file system is read-only: no kernel cache to write
    walls.limit_threads()
    load.give_earlier(earlier, kata_id)
    guard.configure({filename}, trusted_files=[file for file, _ in earlier.values()])
    guard.arm(forbidden)
    channel = Channel(sock)
    server = Server(channel, filename=filename, output_limit=output_limit, mode=guard.forbidden_mode(forbidden))

    def stack(_signum, frame) -> None:
        with contextlib.suppress(OSError, TypeError):
            channel.send({"stack": load.stack_frames(frame, server.files)})

    signal.signal(signal.SIGUSR1, stack)
    warnings.simplefilter("default")  # every warning the student's code causes is shown, once per line
    warnings.showwarning = functools.partial(show_warning, frozenset({filename}))
    channel.send({"ready": report.to_dict()})
    try:
        server.serve()
    except WireError:
        return 2
    return 0
