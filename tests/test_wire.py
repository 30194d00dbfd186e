"""The wire between the judge and the student's process: what crosses, and what a hostile sender cannot do.

Unit tests of `kata.wire` (frames and values) and of the judge's end (`kata.toolkit.remote.Session`) against a
fake student's process speaking over a socket pair from a thread: every malformed, oversized, late or
out-of-turn answer ends the student's side (`StudentGone`), is never unpickled, and allocates nothing before
its size is checked."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import torch

from kata.toolkit import remote
from kata.wire.frames import Channel, Closed, TimedOut, WireError
from kata.wire.values import Packer, Unpacker, oid


def pair(**caps) -> tuple[Channel, Channel]:
    a, b = socket.socketpair()
    return Channel(a, **caps), Channel(b)


def no_reference(tagged):
    raise WireError(f"no reference expected: {tagged}")


def cannot_refer(obj):
    raise TypeError(f"no reference expected: {type(obj).__name__}")


def round_trip(value, refer=cannot_refer, resolve=no_reference, leaves=False):
    """`value` packed, through JSON and bytes, and unpacked again."""
    packer = Packer(refer)
    data = json.loads(json.dumps(packer.pack_iterator(value) if isinstance(value, Iterator) else packer.pack(value)))
    buffers = [bytearray(bytes(b)) for b in packer.buffers]
    unpacker = Unpacker(json.loads(json.dumps(packer.tensors)), buffers, resolve, leaves=leaves)
    return unpacker.unpack(data)


# ---- frames


def test_a_message_and_its_buffers_cross_whole():
    ours, theirs = pair()
    theirs.send({"op": "x", "n": 1}, [b"abc", memoryview(b"")])
    header, buffers = ours.receive(time.monotonic() + 5)
    assert header == {"op": "x", "n": 1} and buffers == [bytearray(b"abc"), bytearray(b"")]


def framed(header: bytes) -> bytes:
    return len(header).to_bytes(4, "big") + header


@pytest.mark.parametrize("raw, words", [
    ((5 * 1024 * 1024).to_bytes(4, "big"), "header of 5,242,880 bytes"),  # past the header cap
    (framed(b'{"a":'), "not JSON"),
    (framed(b"[]"), "not an object"),
    (framed(b'{"buffers": [-1]}'), "buffer lengths"),
    (framed(b'{"buffers": [9000000000000]}'), "bytes of buffers"),  # refused before allocating
])
def test_a_malformed_or_oversized_message_is_refused(raw, words):
    ours, theirs = pair(max_header=1024 * 1024, max_total=1 << 30)
    theirs.sock.sendall(raw)
    theirs.sock.close()
    with pytest.raises(WireError, match=words):
        ours.receive(time.monotonic() + 5)


def test_an_end_before_a_message_is_closed_and_mid_message_is_broken():
    ours, theirs = pair()
    theirs.close()
    with pytest.raises(Closed):
        ours.receive()
    ours, theirs = pair()
    theirs.sock.sendall(b"\0\0\0\x10{\"a\"")
    theirs.close()
    with pytest.raises(WireError, match="middle of a message"):
        ours.receive()


def test_no_message_by_the_deadline_times_out():
    ours, _theirs = pair()
    started = time.monotonic()
    with pytest.raises(TimedOut):
        ours.receive(started + 0.2)
    assert time.monotonic() - started < 2


# ---- values


@pytest.mark.parametrize("value", [
    None, True, 0, -(2**70), 1.5, float("inf"), "text", [1, [2, "x"]], (1, (2,)), {"a": 1, 2: [None]},
    torch.float16, torch.device("cpu"), torch.Size([2, 3]), slice(1, None, 2),
])
def test_plain_values_cross_as_they_are(value):
    assert round_trip(value) == value and type(round_trip(value)) is type(value)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int64,
                                   torch.int8, torch.uint8, torch.bool])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
def test_tensors_cross_by_value(dtype, shape):
    t = (torch.randn(shape) * 5).to(dtype)
    back = round_trip(t)
    assert type(back) is torch.Tensor and back.dtype == dtype and back.shape == t.shape and torch.equal(back, t)


def test_a_view_crosses_as_its_values_and_a_meta_tensor_as_its_shape():
    base = torch.arange(12.0).reshape(3, 4)
    assert torch.equal(round_trip(base.t()[1:]), base.t()[1:])
    meta = round_trip(torch.empty(5, 7, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (5, 7)


def test_one_tensor_twice_arrives_as_one_object_and_a_namedtuple_as_a_tuple():
    t = torch.ones(2)
    q, k = round_trip([t, t])
    assert q is k
    from collections import namedtuple

    pair_ = round_trip(namedtuple("Attended", "out weights")(t, t))
    assert type(pair_) is tuple and pair_[0] is pair_[1]


def test_parameters_cross_with_their_gradient_and_iterators_as_iterators():
    p = torch.nn.Parameter(torch.ones(3))
    (p * 2).sum().backward()
    (name, back), = list(round_trip(iter([("w", p)])))
    assert name == "w" and isinstance(back, torch.nn.Parameter) and torch.equal(back.grad, torch.full((3,), 2.0))


def test_a_tensor_keeps_which_object_it_was():
    t = torch.zeros(2)
    packer = Packer(cannot_refer, oids=lambda tensor: 41 if tensor is t else 0)
    data = packer.pack([t, t.clone()])
    a, b = Unpacker(packer.tensors, [bytearray(bytes(x)) for x in packer.buffers], no_reference,
                    leaves=False).unpack(data)
    assert oid(a) == 41 and remote.same(a, a) and not remote.same(a, b)


@pytest.mark.parametrize("data, tensors, words", [
    ({"pickle": "gASVBQ=="}, [], "unknown form"),
    ({"t": 3}, [], "does not hold"),
    ({"t": 0}, [{"dtype": "complex64", "shape": [1], "buffer": 0}], "no known dtype"),
    ({"t": 0}, [{"dtype": "float32", "shape": [2, 2], "buffer": 0}], "with 4 bytes"),
    ({"t": 0}, [{"dtype": "float32", "shape": [1], "buffer": 7}], "bytes are not in the message"),
    ({"t": 0}, [{"dtype": "float32", "shape": [2**41], "buffer": 0}], "no known dtype or no shape"),
    ({"dict": [["a"]]}, [], "pair"),
    ({"handle": 1}, [], "no reference expected"),
])
def test_a_value_that_is_not_what_it_says_is_refused(data, tensors, words):
    with pytest.raises(WireError, match=words):
        Unpacker(tensors, [bytearray(4)], no_reference, leaves=False).unpack(data)


def test_values_nested_too_deep_are_refused():
    deep = {"list": []}
    for _ in range(100):
        deep = {"list": [deep]}
    with pytest.raises(WireError, match="deeper"):
        Unpacker([], [], no_reference, leaves=False).unpack(deep)


# ---- the judge's end, against a fake student's process


class FakeStudent(threading.Thread):
    """Answers the judge's requests with `answer(header, buffers) -> (reply, buffers)` (None: say nothing)."""

    def __init__(self, channel: Channel, answer):
        super().__init__(daemon=True)
        self.channel, self.answer = channel, answer
        self.start()

    def run(self):
        while True:
            try:
                header, buffers = self.channel.receive()
            except (WireError, OSError):
                return
            answered = self.answer(header, buffers)
            if answered is not None:
                self.channel.send(*answered)


def session(answer, deadline: float | None = None) -> remote.Session:
    ours, theirs = pair()
    FakeStudent(theirs, answer)
    child = os.fork()
    if child == 0:  # a process to reap and kill, standing in for the student's
        signal.pause()
        os._exit(0)
    return remote.Session(ours, remote.Process(child, child, walls={}), filename="exercise.py", deadline=deadline)


MODULE = {"handle": 0, "type": "module", "mro": ["module", "object"], "callable": False}


def test_a_call_crosses_and_a_student_exception_is_rebuilt_by_its_built_in():
    def answer(header, _):
        if header["op"] == "load":
            return {"id": header["id"], "ok": True, "value": MODULE}, []
        error = {"type": "HeadsDoNotDivide", "mro": ["HeadsDoNotDivide", "ValueError", "Exception"],
                 "message": "12 % 5", "frames": [{"file": "exercise.py", "line": 3, "function": "f"}]}
        return {"id": header["id"], "ok": False, "error": error, "output": "printed\n"}, []

    s = session(answer)
    module = s.load("source")
    with pytest.raises(ValueError) as info:
        module.MultiHeadAttention(12, 5)
    assert isinstance(info.value, remote.StudentError) and info.value.type_name == "HeadsDoNotDivide"
    assert info.value.frames[0]["line"] == 3 and s.take_output() == "printed\n"
    s.close()


@pytest.mark.parametrize("reply, words", [
    ({"id": 99, "ok": True, "value": None}, "out of turn"),
    ({"id": 1, "ok": "yes"}, "out of turn"),
    ({"id": 1, "ok": True, "value": {"handle": 3}}, "without its type"),
    ({"id": 1, "ok": True, "value": {"callback": 5}}, "unknown reference"),
    ({"id": 1, "op": "callback", "callback": 1, "args": {"list": []}, "kwargs": {"dict": []}}, "may not"),
])
def test_an_answer_out_of_turn_or_naming_what_it_may_not_ends_the_student_side(reply, words):
    s = session(lambda header, _: (reply, []))
    with pytest.raises(remote.StudentGone) as info:
        s.load("source")
    assert info.value.kind == "protocol" and words in info.value.message
    with pytest.raises(remote.StudentGone):  # and stays ended
        s.load("source")
    assert s.process.status is not None  # reaped


def test_no_answer_by_the_deadline_is_a_timeout_with_the_stack_it_sent():
    def answer(header, _):
        return None  # never answers; the stack comes as the signal handler would send it

    ours, theirs = pair()
    FakeStudent(theirs, answer)
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGUSR1, lambda *_: theirs.send({"stack": [{"file": "exercise.py", "line": 7,
                                                                          "function": "softmax"}]}))
        while True:
            signal.pause()
    time.sleep(0.2)
    s = remote.Session(ours, remote.Process(child, child, walls={}), filename="exercise.py",
                       deadline=time.monotonic() + 0.5)
    with pytest.raises(remote.StudentGone) as info:
        s.load("source")
    gone = info.value
    assert gone.kind == "timeout" and gone.stack_seen and gone.frames[0]["line"] == 7
    assert gone.during == "importing your file"


def test_a_process_that_ends_is_a_crash_with_its_own_status():
    ours, theirs = pair()
    child = os.fork()
    if child == 0:
        ours.close()
        theirs.close()
        os._exit(3)
    theirs.close()
    s = remote.Session(ours, remote.Process(child, child, walls={}), filename="exercise.py")
    with pytest.raises(remote.StudentGone) as info:
        s.load("source")
    assert info.value.kind == "crash" and "exit code 3" in info.value.message


def test_autograd_crosses_and_a_lent_function_is_called_back():
    """A call whose output leads back to an input: its gradient comes from the student's side's backward. A
    grader's function passed in is called back while the call runs."""
    calls = []

    def answer(header, buffers):
        if header["op"] == "load":
            return {"id": header["id"], "ok": True, "value": MODULE}, []
        if header["op"] == "getattr":
            return {"id": header["id"], "ok": True,
                    "value": {"handle": 5, "type": "function", "mro": ["function", "object"], "callable": True}}, []
        unpacker = Unpacker(header.get("tensors", []), buffers, lambda tagged: tagged, leaves=True)
        if header["op"] == "call":
            x, hook = unpacker.unpack(header["args"])
            calls.append(hook)
            packer = Packer(cannot_refer)
            value = packer.pack(x.detach() * 3)
            packer.tensors[0]["requires_grad"] = True
            return {"id": header["id"], "ok": True, "value": value, "tensors": packer.tensors, "graph": 1,
                    "leading": [0]}, packer.buffers
        if header["op"] == "backward":
            (g,) = unpacker.unpack(header["grads"])
            packer = Packer(cannot_refer)
            return {"id": header["id"], "ok": True, "value": packer.pack([g * 3]), "tensors": packer.tensors}, \
                packer.buffers
        return {"id": header["id"], "ok": True, "value": None}, []

    s = session(answer)
    module = s.load("source")
    x = torch.ones(2, requires_grad=True)
    out = module.f(x, lambda: None)
    assert out.requires_grad and calls == [{"callback": 1}]
    (out * torch.tensor([1.0, 2.0])).sum().backward()
    assert torch.equal(x.grad, torch.tensor([3.0, 6.0]))
    s.close()


def test_the_first_word_must_be_that_it_is_ready_with_its_walls():
    """A new student's process says it is ready, and what its walls are, before anything else; the session
    waits for that at its first request (the judge loads the graders meanwhile)."""
    for first, kind in (({"ready": {"namespaces": True, "signal_pid": 0}}, None), ({"id": 1, "ok": True}, "protocol")):
        ours, theirs = pair()
        theirs.send(first)
        FakeStudent(theirs, lambda header, _: ({"id": header["id"], "ok": True, "value": MODULE}, []))
        child = os.fork()
        if child == 0:
            signal.pause()
            os._exit(0)
        s = remote.Session(ours, remote.Process(child, child), filename="exercise.py")
        if kind is None:
            assert s.ready() == {"namespaces": True} and s.process.signal_pid == child
            assert isinstance(s.load("source"), remote.RemoteObject)
            s.close()
        else:
            with pytest.raises(remote.StudentGone) as info:
                s.load("source")
            assert info.value.kind == kind and "ready" in info.value.message
