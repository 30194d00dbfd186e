"""The student's code as graders see it: proxies for objects that live in the student's process.

The grading process never imports the student's file. The `student` fixture is a `RemoteObject` for the
student's module, and everything reached from it is either a value that crossed by value (tensors, numbers,
strings, lists, dicts: `kata.wire.values`) or another `RemoteObject`:

    out = student.softmax(x, dim=1)               # a tensor, computed there, checked here
    mha = student.MultiHeadAttention(16, 4)       # a RemoteObject: a handle to the student's module
    mha.load_state_dict(state); mha.eval()        # calls made there
    weights = mha.attn_weights                    # a tensor, by value
    is_a(mha, "Module"), type_name(mha)           # what it is there (isinstance sees a RemoteObject)

Autograd crosses too: a call whose outputs lead back, in the student's process, to its inputs or
parameters gives outputs that lead back here through one node (`_Bridge`), whose backward sends the
output gradients over, runs the student's backward there, and brings the inputs' gradients back; the
parameters' gradients stay there, in their `.grad`, as `Tensor.backward` leaves them (read them with
`named_parameters()`). A function of the grader's passed to the student's code (a hook, `monkeypatch.setattr`
on the student's module) is lent: the student's process calls it back here.

Tensors cross by value, so an input changed in place there is not changed here: `changed_inputs()`
collects, for the calls made inside it, what the student's code left in each input (`check_inputs_unchanged`
uses it). Identity crosses as `same(a, b)`: two tensors the student's process sent as the same object.

What the student's process answers is checked before it is used: a malformed answer, one past the size
caps, one that comes after the run's deadline, or a process that died, ends the run (`StudentGone`); an
exception raised by the student's code arrives as a `StudentError` (a subclass of the built-in exception
of the same name, for the usual ones, so `except ValueError:` in a grader works).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import types
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from kata.wire.frames import Channel, Closed, TimedOut, WireError
from kata.wire.values import Packer, Unpacker, oid

STACK_WAIT_S = 1.0  # how long the judge waits for the stack after asking for it
READY_WAIT_S = 60.0  # how long a new student's process may take to build its walls
OUTPUT_CAP = 4000
_LENT_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


class StudentError(Exception):
    """An exception the student's code raised in its process: its type's name, message and frames."""

    def __init__(self, type_name: str, message: str, frames: list[dict], mro: tuple[str, ...] = ()):
        super().__init__(message)
        self.type_name, self.message, self.frames, self.mro = type_name, message, frames, mro

    def __str__(self) -> str:
        return self.message


class StudentForbidden(StudentError):
    """The student's code called a built-in the kata forbids (the guard in its process said so)."""


_REBUILT = {base.__name__: type(f"Student{base.__name__}", (StudentError, base), {})
            for base in (ValueError, TypeError, NotImplementedError, RuntimeError, IndexError, KeyError,
                         AttributeError, ZeroDivisionError, ArithmeticError, LookupError, OverflowError, MemoryError)}


def student_error(description) -> StudentError:
    """The exception a description from the student's process stands for (checked: it comes from there)."""
    if not isinstance(description, dict):
        raise WireError("an error that is not described")
    name = str(description.get("type", "Exception"))[:200]
    mro = tuple(str(n)[:200] for n in description.get("mro", ()) if isinstance(n, str))[:64]
    message = str(description.get("message", ""))[:20_000]
    frames = [{"file": str(f.get("file")), "line": int(f.get("line") or 0), "function": str(f.get("function", ""))}
              for f in description.get("frames", ()) if isinstance(f, dict) and isinstance(f.get("line", 0), int)]
    if name == "ForbiddenBuiltin":
        return StudentForbidden(name, message, frames, mro)
    # The student's own exception class stands for the first built-in it derives from (`except ValueError:`).
    cls = next((_REBUILT[n] for n in (name, *mro) if n in _REBUILT), StudentError)
    return cls(name, message, frames, mro)


class StudentGone(Exception):
    """The student's process cannot go on: it died, broke the protocol, or ran past the deadline (`kind`:
    "crash", "protocol", "timeout", "memory"), during `during` (what the judge had asked)."""

    def __init__(self, kind: str, message: str, during: str = "", frames: list[dict] | None = None,
                 stack_seen: bool = False):
        super().__init__(message)
        self.kind, self.message, self.during, self.frames = kind, message, during, frames or []
        self.stack_seen = stack_seen  # (a timeout) the process said where it was


@dataclass
class Process:
    """The student's process as the judge knows it: the pid it reaps, the pid it signals, and its walls (as
    it said once ready, `kata.student.walls.Report`)."""

    pid: int
    signal_pid: int
    walls: dict | None = None
    status: int | None = None

    def kill(self) -> None:
        for pid in {self.signal_pid, self.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def reap(self, grace: float = 0.0) -> int:
        """Its exit status as `subprocess` reports one (negative: the signal that killed it), once it has ended:
        given `grace` seconds to end by itself (a process whose socket closed is ending: its own status tells
        why), then killed."""
        if self.status is None:
            until = time.monotonic() + grace
            try:
                while (ended := os.waitpid(self.pid, os.WNOHANG))[0] == 0 and time.monotonic() < until:
                    time.sleep(0.01)
                if ended[0] == 0:
                    self.kill()
                    ended = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(ended[1])
            except ChildProcessError:
                self.status = 0
            if self.status > 128 and self.pid != self.signal_pid:  # its init's way of saying "killed by"
                self.status = 128 - self.status
        return self.status


class Session:
    """The judge's end of the wire to one student process. Every request goes through `request`."""

    def __init__(self, channel: Channel, process: Process, *, filename: str, deadline: float | None = None,
                 output_limit: int = OUTPUT_CAP):
        self.channel, self.process, self.filename = channel, process, filename
        self.deadline, self.output_limit = deadline, output_limit
        self.output = ""
        self.gone: StudentGone | None = None
        self._next = 1
        self._lent: dict[int, object] = {}
        self._lent_ids: dict[int, int] = {}
        self._proxies: weakref.WeakValueDictionary[int, RemoteObject] = weakref.WeakValueDictionary()
        self._release = {"handles": [], "graphs": []}
        self._seed: int | None = None
        self._watch: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None
        self._device: str | None = None
        self._callback_error: BaseException | None = None
        self.doing = ""  # what was asked last: named when the process dies or runs out of time
        global _current
        _current = self

    # ---- requests

    def request(self, op: str, fields: dict, packer: Packer | None = None, *, doing: str = "") -> tuple[dict, Unpacker]:
        """Send a request and wait for its reply (serving the student's callbacks meanwhile); the reply and
        the unpacker of its values. A `StudentError` if the student's code raised; `StudentGone` if the process
        cannot answer."""
        self.ready()
        number = self._next
        self._next += 1
        header = {"id": number, "op": op, **fields}
        if self._release["handles"] or self._release["graphs"]:
            header["release"], self._release = self._release, {"handles": [], "graphs": []}
        if self._seed is not None:
            header["seed"], self._seed = self._seed, None
        buffers = []
        if packer is not None:
            header["tensors"], buffers = packer.tensors, packer.buffers
        self.doing = doing or op
        try:
            self.channel.send(header, buffers)
        except OSError:
            self._lost("crash")
        while True:
            reply, received = self._receive()
            if "op" in reply:
                self._serve_callback(reply, received)
                continue
            if reply.get("id") != number or type(reply.get("ok")) is not bool:
                self._lost("protocol", "it answered out of turn")
            self._take_output(reply.get("output"))
            try:
                unpacker = Unpacker(reply.get("tensors", []), received, self._resolve, leaves=False)
            except WireError as exc:
                self._lost("protocol", str(exc))
            if self._callback_error is not None:
                error, self._callback_error = self._callback_error, None
                raise error
            if not reply["ok"]:
                try:
                    raise student_error(reply.get("error"))
                except WireError as exc:
                    self._lost("protocol", str(exc))
            return reply, unpacker

    def ready(self) -> dict:
        """The walls of the student's process, once it has said it is ready (waiting for that the first time);
        `StudentGone` if it cannot answer."""
        if self.gone is not None:
            raise self.gone
        if self.process.walls is None:
            self.doing = "starting your code's process"
            try:
                header, _ = self.channel.receive(time.monotonic() + READY_WAIT_S)
            except TimedOut:
                self._lost("crash", "it did not start")
            except Closed:
                self._lost("crash")
            except (WireError, OSError) as exc:
                self._lost("protocol", str(exc))
            walls = header.get("ready")
            if not isinstance(walls, dict) or type(walls.get("signal_pid")) is not int:
                self._lost("protocol", "its first word was not that it is ready")
            self.process.signal_pid = walls.pop("signal_pid") or self.process.pid
            self.process.walls = walls
        return self.process.walls

    def value(self, reply: dict, unpacker: Unpacker, key: str = "value"):
        try:
            return unpacker.unpack(reply.get(key))
        except WireError as exc:
            self._lost("protocol", str(exc))

    def _receive(self) -> tuple[dict, list[bytearray]]:
        while True:
            try:
                header, buffers = self.channel.receive(self.deadline)
            except TimedOut:
                self._timed_out()
            except Closed:
                self._lost("crash")
            except (WireError, OSError) as exc:
                self._lost("protocol", str(exc))
            if "stack" in header and len(header) == 1:
                continue  # a stack nobody asked for (a signal of the student's own): display text, dropped
            return header, buffers

    def _take_output(self, text) -> None:
        if isinstance(text, str) and text:
            room = self.output_limit - len(self.output)
            if room <= 0:
                return  # the note that more was printed is there already
            self.output += text if len(text) <= room else text[:room] + "\n… (more not kept)"

    def take_output(self) -> str:
        text, self.output = self.output, ""
        return text

    def _timed_out(self):
        frames = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.process.signal_pid, signal.SIGUSR1)
        until = time.monotonic() + STACK_WAIT_S
        with contextlib.suppress(TimedOut, WireError, OSError):
            while frames is None:
                header, _ = self.channel.receive(until)
                if isinstance(header.get("stack"), list):
                    frames = [f for f in header["stack"] if isinstance(f, dict)]
        self.process.kill()
        self.process.reap()
        self.gone = StudentGone("timeout", "ran past the time budget", self.doing, self._frames(frames or []),
                                stack_seen=frames is not None)
        raise self.gone

    def _lost(self, kind: str, why: str = ""):
        status = self.process.reap(grace=1.0 if kind == "crash" else 0.0)
        if kind == "crash":
            from kata.student.walls import MEMORY_EXIT_CODE

            if status == MEMORY_EXIT_CODE:
                kind, why = "memory", "it went over the kata's memory limit"
            elif status < 0:
                try:
                    name = signal.Signals(-status).name
                except ValueError:
                    name = f"signal {-status}"
                why = f"it was killed by {name}" + (" (out of memory?)" if -status == signal.SIGKILL else "")
            else:
                why = (f"it ended with exit code {status}: did your code call os._exit() or sys.exit(), or crash "
                       "the interpreter?")
        else:
            why = f"it broke the grading protocol ({why})"
        self.gone = StudentGone(kind, why, self.doing)
        raise self.gone

    def _frames(self, frames: list[dict]) -> list[dict]:
        return [{"file": str(f.get("file")), "line": f.get("line") if type(f.get("line")) is int else 0,
                 "function": str(f.get("function", ""))[:200]} for f in frames[:200]]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.channel.close()
        self.process.kill()
        self.process.reap()

    # ---- the grader's functions, lent

    def _serve_callback(self, request: dict, buffers: list[bytearray]) -> None:
        number = request.get("id")
        function = self._lent.get(request.get("callback")) if request.get("op") == "callback" else None
        if function is None:
            self._lost("protocol", "it asked for something it may not")
        try:  # tensors as the student's code passed them: requires_grad said (leaves), no graph
            unpacker = Unpacker(request.get("tensors", []), buffers, self._resolve, leaves=True)
            args, kwargs = unpacker.unpack(request.get("args")), unpacker.unpack(request.get("kwargs"))
        except WireError as exc:
            self._lost("protocol", str(exc))
        if type(args) is not list or type(kwargs) is not dict:
            self._lost("protocol", "a callback's arguments are not a list and a dict")
        try:
            result = function(*args, **kwargs)
            packer = self._packer()
            reply = {"id": number, "ok": True, "value": packer.pack(result), "tensors": packer.tensors}
            buffers = packer.buffers
        except Exception as exc:  # the grader's function failed: the student's code sees an error, the check fails
            if self._callback_error is None:
                self._callback_error = exc
            reply, buffers = {"id": number, "ok": False, "message": f"{type(exc).__name__}: {exc}"}, []
        try:
            self.channel.send(reply, buffers)
        except OSError:
            self._lost("crash")

    def _refer(self, obj) -> dict:
        if isinstance(obj, RemoteObject) and obj._session is self:
            return {"handle": obj._handle}
        if isinstance(obj, RemoteMethod) and obj.owner._session is self:
            return {"method": obj.name, "of": obj.owner._handle}
        if isinstance(obj, torch.nn.Module):
            raise TypeError(f"a {type(obj).__name__} of the grader's cannot go to the student's process: build it "
                            "there (kata.toolkit.remote.earlier) and load its state")
        if isinstance(obj, _LENT_TYPES) or (callable(obj) and not isinstance(obj, type)):
            number = self._lent_ids.get(id(obj))
            if number is None:
                number = len(self._lent) + 1
                self._lent[number], self._lent_ids[id(obj)] = obj, number
            return {"callback": number}
        raise TypeError(f"cannot send a {type(obj).__name__} to the student's process")

    def _resolve(self, tagged: dict):
        if "handle" in tagged:
            handle = tagged["handle"]
            if type(handle) is not int:
                raise WireError("a handle that is not a number")
            proxy = self._proxies.get(handle)
            if proxy is None:
                if handle in self._release["handles"]:  # an earlier proxy of it died: not to be released now
                    self._release["handles"].remove(handle)
                mro = tagged.get("mro")
                if type(mro) is not list or not all(type(n) is str for n in mro):
                    raise WireError("a handle without its type")
                name = tagged.get("name") if isinstance(tagged.get("name"), str) else mro[0] if mro else "object"
                proxy = RemoteObject(self, handle, tuple(n[:200] for n in mro[:64]), tagged.get("callable") is True,
                                     name[:200])
                self._proxies[handle] = proxy
            return proxy
        if "method" in tagged and type(tagged.get("method")) is str:
            return RemoteMethod(self._resolve({"handle": tagged.get("of"), "mro": ["object"]}), tagged["method"])
        if "callback" in tagged and tagged["callback"] in self._lent:
            return self._lent[tagged["callback"]]
        raise WireError(f"an unknown reference {sorted(tagged)}")

    def _packer(self) -> Packer:
        return Packer(self._refer)

    def release(self, handle: int) -> None:
        self._release["handles"].append(handle)

    def release_graph(self, graph: int) -> None:
        self._release["graphs"].append(graph)

    def seed(self, seed: int) -> None:
        """Seed torch's generators there before the next request, as this process seeds its own."""
        self._seed = seed

    # ---- the operations

    def getattr(self, target: RemoteObject, name: str):
        reply, unpacker = self.request("getattr", {"target": target._handle, "name": name},
                                       doing=f"reading {target._mro[0]}.{name}")
        return self.value(reply, unpacker)

    def setattr(self, target: RemoteObject, name: str, value) -> None:
        packer = self._packer()
        self.request("setattr", {"target": target._handle, "name": name, "value": packer.pack(value)}, packer,
                     doing=f"setting {target._mro[0]}.{name}")

    def call(self, target: RemoteObject, method: str | None, args: tuple, kwargs: dict):
        packer = self._packer()
        fields = {"target": target._handle, "method": method, "args": packer.pack(list(args)),
                  "kwargs": packer.pack(dict(kwargs)), "grad": torch.is_grad_enabled(),
                  "watch": self._watch is not None, "device": self._device}
        what = target._name if method in (None, "__call__") else f"{target._name}.{method}"
        reply, unpacker = self.request("call", fields, packer, doing=f"calling {what}")
        inputs = packer.originals
        graph = reply.get("graph")
        if graph is not None:
            self._bridge(graph, reply.get("leading"), unpacker, inputs)
        if self._watch is not None:
            for change in reply.get("changed") or ():
                if type(change) is list and len(change) == 2 and type(change[0]) is int and change[0] < len(inputs):
                    now = self.value({"v": change[1]}, unpacker, "v")
                    if isinstance(now, torch.Tensor):
                        self._watch[id(inputs[change[0]])] = (inputs[change[0]], now)
        return self.value(reply, unpacker)

    def _bridge(self, graph, leading, unpacker: Unpacker, inputs: list[torch.Tensor]) -> None:
        """Make the call's outputs that lead back there lead back here (see `_Bridge`), before the value is built."""
        if type(graph) is not int or type(leading) is not list or not all(type(r) is int for r in leading):
            self._lost("protocol", "a graph without its outputs")
        try:
            outputs = [unpacker.tensor(row) for row in leading]
        except WireError as exc:
            self._lost("protocol", str(exc))
        wanted = [t for t in inputs if t.requires_grad]
        link = _GraphLink(self, graph, [i for i, t in enumerate(inputs) if t.requires_grad])
        bridged = _Bridge.apply(link, _ANCHOR, len(wanted), *wanted, *outputs)
        for row, t in zip(leading, bridged, strict=True):
            unpacker.decoded[row] = t

    def backward(self, graph: int, grads: list, rows: list[int]) -> list:
        packer = self._packer()
        reply, unpacker = self.request("backward", {"graph": graph, "grads": packer.pack(list(grads))}, packer,
                                       doing="computing gradients")
        values = self.value(reply, unpacker)
        if type(values) is not list:
            self._lost("protocol", "gradients that are not a list")
        return [values[r] if r < len(values) and isinstance(values[r], torch.Tensor) else None for r in rows]

    def earlier(self, module: str) -> RemoteObject:
        reply, unpacker = self.request("earlier", {"module": module}, doing=f"importing kata.earlier.{module}")
        return self.value(reply, unpacker)

    def load(self, source: str) -> RemoteObject:
        reply, unpacker = self.request("load", {"source": source}, doing="importing your file")
        module = self.value(reply, unpacker)
        if not isinstance(module, RemoteObject):
            self._lost("protocol", "the loaded module is not an object")
        object.__setattr__(module, "_module", True)
        return module

    @contextlib.contextmanager
    def default_device(self, device: str) -> Iterator[None]:
        """Calls inside the block run with torch's default device set to `device` there ("meta": a model's
        parameters have shapes and no values, and are made in no time)."""
        outer, self._device = self._device, str(device)
        try:
            yield
        finally:
            self._device = outer

    @contextlib.contextmanager
    def changed_inputs(self) -> Iterator[dict[int, tuple[torch.Tensor, torch.Tensor]]]:
        """For the calls inside the block: id(input) -> (the input, what the student's code left in it)."""
        outer, self._watch = self._watch, {}
        try:
            yield self._watch
        finally:
            if outer is not None:
                outer.update(self._watch)
            self._watch = outer


class _GraphLink:
    """A graph kept in the student's process for outputs here: released there when they are gone here."""

    def __init__(self, session: Session, graph: int, rows: list[int]):
        self.session, self.graph, self.rows = session, graph, rows

    def __del__(self):
        try:  # noqa: SIM105 (at the interpreter's exit `contextlib` may be gone already)
            self.session.release_graph(self.graph)
        except Exception:  # nothing is left to release
            pass


_ANCHOR = torch.zeros((), requires_grad=True)  # makes every bridged output require grad, as it does there


class _Bridge(torch.autograd.Function):
    """One autograd node standing for a call made in the student's process: inputs (those that require grad),
    then the call's outputs (already computed there) in; the outputs out. Its backward runs there."""

    @staticmethod
    def forward(ctx, link: _GraphLink, _anchor, inputs: int, *tensors):
        ctx.link, ctx.outputs = link, len(tensors) - inputs
        return tuple(t.detach() for t in tensors[inputs:])

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        link = ctx.link
        back = link.session.backward(link.graph, list(grads), link.rows)
        return (None, None, None, *back, *([None] * ctx.outputs))


class RemoteObject:
    """An object that lives in the student's process (see the module's docstring). Its own attributes are
    slots (it has no `__dict__`: `monkeypatch.setattr` then restores the attribute there, as it found it);
    every other attribute is asked for there."""

    __slots__ = ("__weakref__", "_cache", "_callable", "_handle", "_module", "_mro", "_name", "_session")

    def __init__(self, session: Session, handle: int, mro: tuple[str, ...], is_callable: bool, name: str):
        for slot, value in (("_session", session), ("_handle", handle), ("_mro", mro), ("_callable", is_callable),
                            ("_name", name), ("_cache", {}), ("_module", False)):
            object.__setattr__(self, slot, value)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        cache = self._cache
        if name in cache:
            return cache[name]
        value = self._session.getattr(self, name)
        # Looked up once: the object's methods (`mine.eval`, `mine.load_state_dict`), and the module's functions
        # and classes. The graders call them again and again; what the grader sets itself is looked up again.
        if isinstance(value, RemoteMethod) or (self._module and isinstance(value, RemoteObject) and value._callable):
            cache[name] = value
        return value

    def __setattr__(self, name: str, value) -> None:
        self._cache.pop(name, None)
        self._session.setattr(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete {name} of the student's object")

    def __call__(self, *args, **kwargs):
        return self._session.call(self, None, args, kwargs)

    def __iter__(self):
        return iter(self._session.call(self, "__iter__", (), {}))

    def __len__(self) -> int:
        value = self._session.call(self, "__len__", (), {})
        if type(value) is not int:
            raise TypeError(f"len() of the student's {self._mro[0]} gave a {type(value).__name__}")
        return value

    def __getitem__(self, key):
        return self._session.call(self, "__getitem__", (key,), {})

    def __contains__(self, item) -> bool:
        return bool(self._session.call(self, "__contains__", (item,), {}) is True)

    def __bool__(self) -> bool:
        return self._session.call(self, "__bool__", (), {}) is True

    def __repr__(self) -> str:
        reply, _ = self._session.request("repr", {"target": self._handle}, doing=f"showing a {self._mro[0]}")
        text = reply.get("value")
        return text if isinstance(text, str) else f"<{self._mro[0]}>"

    def __del__(self):
        try:  # noqa: SIM105 (at the interpreter's exit `contextlib` may be gone already)
            self._session.release(self._handle)
        except Exception:  # nothing is left to release
            pass


class RemoteMethod:
    """A method of a `RemoteObject`: calling it calls it there."""

    def __init__(self, owner: RemoteObject, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args, **kwargs):
        return self.owner._session.call(self.owner, self.name, args, kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name} of the student's {self.owner._mro[0]}>"


def is_a(obj, type_name: str) -> bool:
    """Whether `obj` is (or, for a RemoteObject, says it is) an instance of a class named `type_name`."""
    if isinstance(obj, RemoteObject):
        return type_name in obj._mro
    return any(c.__name__ == type_name for c in type(obj).__mro__)


def type_name(obj) -> str:
    """The name of `obj`'s type, where it lives."""
    if isinstance(obj, RemoteObject):
        return obj._mro[0]
    if isinstance(obj, RemoteMethod):
        return "method"
    return type(obj).__name__


def same(a, b) -> bool:
    """Whether two tensors the student's process sent were the same object there (or are the same here)."""
    if a is b:
        return True
    return oid(a) is not None and oid(a) == oid(b)


_current: Session | None = None  # the one student's process this judge grades


def current() -> Session:
    if _current is None:
        raise RuntimeError("no student's process: graders run under the kata plugin")
    return _current


def earlier(module: str) -> RemoteObject:
    """`kata.earlier.<module>` in the student's process (the reference pieces of an earlier kata), to build
    objects there that the student's functions take (a model for the student's optimiser)."""
    return current().earlier(module)


def changed_inputs():
    """`Session.changed_inputs` of the student's process."""
    return current().changed_inputs()


def default_device(device: str):
    """`Session.default_device` of the student's process."""
    return current().default_device(device)
