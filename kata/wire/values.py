"""Values as they cross the wire: plain data by value, tensors as raw bytes, every other object by reference.

A value is packed into JSON-able data, its tensors into a table of descriptors beside it (one per distinct
tensor object: the same tensor passed twice arrives as one) and their bytes into buffers
(`kata.wire.frames`). Only these cross by value: `None`, `bool`, `int`, `float`, `str` (their exact types,
as execnet has it), and lists, tuples (a namedtuple arrives as a plain tuple), dicts of plain keys, iterators
(sent as the list of what they yield), dtypes, devices, sizes and slices of them. Tagged forms:

    {"t": k}                       the k-th tensor of the message's table
    {"list": [...]}  {"tuple": [...]}  {"iter": [...]}  {"dict": [[key, value], ...]}
    {"dtype": "float32"}  {"device": "cuda:0"}  {"size": [2, 3]}  {"slice": [start, stop, step]}
    {"handle": h, "type": "Linear", "mro": ["Linear", "Module", "object"], "callable": true}
                                   an object that stays in the student's process
    {"method": "eval", "of": h}    a method of such an object
    {"callback": c}                a function that stays in the grading process

A tensor's descriptor: {"buffer": i (None on the meta device), "dtype", "shape", "device",
"requires_grad", and optionally "parameter" (an nn.Parameter), "grad" (the index of its .grad in the
table), "oid" (which object it is on the side that sent it: the same oid, the same tensor)}.
Decoding checks every form and size before it allocates: the dtype on an allow-list, the bytes exactly
`prod(shape) * itemsize`, depth and item counts capped. A form it does not know is a `WireError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch

from kata.wire.frames import WireError

DTYPES = {name: getattr(torch, name) for name in (
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
MAX_DEPTH = 64
MAX_ITEMS = 1_000_000  # values in one message, tensors' elements aside
MAX_DIMS = 16
_PLAIN = (str, int, float, bool, type(None))
_KEY_TYPES = (str, int, float, bool, type(None))


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES[dtype]


class Packer:
    """Packs the values of one message. `refer(obj)` gives the tagged form of an object that does not cross
    by value (a handle on the student's side, a callback on the grading side), or raises TypeError."""

    def __init__(self, refer: Callable[[object], dict], *, oids: Callable[[torch.Tensor], int] | None = None):
        self.refer, self.oids = refer, oids
        self.tensors: list[dict] = []
        self.originals: list[torch.Tensor] = []  # the tensor of each row of `tensors`
        self.buffers: list[memoryview] = []
        self._index: dict[int, int] = {}  # id(tensor) -> its row in `tensors`
        self._keep: list[torch.Tensor] = []  # the copies whose memory the buffers view, until sent
        self._items = 0

    def pack(self, value, depth: int = 0):
        self._items += 1
        if self._items > MAX_ITEMS or depth > MAX_DEPTH:
            raise TypeError(f"a value nested deeper than {MAX_DEPTH} levels or larger than {MAX_ITEMS:,} items")
        kind = type(value)
        if kind in _PLAIN:
            return value
        if isinstance(value, (bool, int, float)):  # a subclass (an IntEnum, numpy.float64): its plain value
            return bool(value) if isinstance(value, bool) else int(value) if isinstance(value, int) else float(value)
        if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0:  # a numpy scalar: numpy.float32
            return self.pack(value.item(), depth)
        if isinstance(value, torch.Tensor):
            return {"t": self.tensor(value)}
        if kind is torch.Size:
            return {"size": [int(n) for n in value]}
        if isinstance(value, (list, tuple)):  # a namedtuple, or torch's return types, crosses as a tuple
            return {"list" if isinstance(value, list) else "tuple": [self.pack(v, depth + 1) for v in value]}
        if isinstance(value, dict):
            if not all(type(k) in _KEY_TYPES for k in value):
                raise TypeError("a dict whose keys are not plain values (str, int, float, bool, None)")
            return {"dict": [[k, self.pack(v, depth + 1)] for k, v in value.items()]}
        if kind is torch.dtype:
            return {"dtype": str(value).removeprefix("torch.")}
        if kind is torch.device:
            return {"device": str(value)}
        if kind is slice:
            return {"slice": [self.pack(value.start, depth + 1), self.pack(value.stop, depth + 1),
                              self.pack(value.step, depth + 1)]}
        return self.refer(value)

    def pack_iterator(self, values: Iterator, depth: int = 0) -> dict:
        """What an iterator yields (a generator: `named_parameters()`), as a list that unpacks as an iterator."""
        items = []
        for item in values:
            if len(items) >= MAX_ITEMS:
                raise TypeError(f"an iterator of more than {MAX_ITEMS:,} items")
            items.append(self.pack(item, depth + 1))
        return {"iter": items}

    def tensor(self, t: torch.Tensor) -> int:
        """The row of `t` in the table (added, with its bytes, the first time)."""
        row = self._index.get(id(t))
        if row is not None:
            return row
        dtype = _DTYPE_NAMES.get(t.dtype)
        if dtype is None:
            raise TypeError(f"a tensor of dtype {t.dtype}, which the wire does not carry")
        if t.dim() > MAX_DIMS:
            raise TypeError(f"a tensor of {t.dim()} dimensions (at most {MAX_DIMS})")
        row = len(self.tensors)
        self._index[id(t)] = row
        self.originals.append(t)
        descriptor = {"dtype": dtype, "shape": list(t.shape), "device": str(t.device),
                      "requires_grad": bool(t.requires_grad), "buffer": None}
        self.tensors.append(descriptor)
        if t.device.type != "meta":
            flat = t.detach().to("cpu").contiguous().reshape(-1)
            self._keep.append(flat)
            descriptor["buffer"] = len(self.buffers)
            self.buffers.append(memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b""))
        if isinstance(t, torch.nn.Parameter):
            descriptor["parameter"] = True
        if self.oids is not None:
            descriptor["oid"] = self.oids(t)
        grad = t.grad if t.is_leaf and t.requires_grad else None
        if grad is not None:
            descriptor["grad"] = self.tensor(grad)
        return row


class Unpacker:
    """Unpacks the values of one message: `tensors` is its table, `buffers` its buffers. `resolve(tagged)`
    turns a reference ({"handle": ...}, {"method": ...}, {"callback": ...}) into the object it names, or
    raises WireError. `leaves`: tensors marked requires_grad come back as leaves that require grad (the
    student's side, given the grader's inputs); otherwise parameters come back as nn.Parameter with their
    .grad (the grading side, given the student's results)."""

    def __init__(self, tensors, buffers: list[bytearray], resolve: Callable[[dict], object], *, leaves: bool):
        if not isinstance(tensors, list):
            raise WireError("a message whose tensor table is not a list")
        self.descriptors, self.buffers, self.resolve, self.leaves = tensors, buffers, resolve, leaves
        self.decoded: dict[int, torch.Tensor] = {}
        self._items = 0

    def unpack(self, data, depth: int = 0):
        self._items += 1
        if self._items > MAX_ITEMS or depth > MAX_DEPTH:
            raise WireError(f"a value nested deeper than {MAX_DEPTH} levels or larger than {MAX_ITEMS:,} items")
        if type(data) in _PLAIN:
            return data
        if type(data) is not dict or len(data) == 0:
            raise WireError(f"a value of an unknown form ({type(data).__name__})")
        tag = next(iter(data))
        body = data[tag]
        if tag == "t" and len(data) == 1:
            return self.tensor(body)
        if tag in ("list", "tuple", "iter") and len(data) == 1 and type(body) is list:
            items = [self.unpack(v, depth + 1) for v in body]
            return items if tag == "list" else tuple(items) if tag == "tuple" else iter(items)
        if tag == "dict" and len(data) == 1 and type(body) is list:
            result = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in _KEY_TYPES:
                    raise WireError("a dict entry that is not a [plain key, value] pair")
                result[pair[0]] = self.unpack(pair[1], depth + 1)
            return result
        if tag == "dtype" and len(data) == 1 and body in DTYPES:
            return DTYPES[body]
        if tag == "device" and len(data) == 1 and type(body) is str and len(body) < 64:
            try:
                return torch.device(body)
            except RuntimeError:
                raise WireError(f"an unknown device {body!r}") from None
        if tag == "size" and len(data) == 1 and _sizes(body):
            return torch.Size(body)
        if tag == "slice" and len(data) == 1 and type(body) is list and len(body) == 3:
            return slice(*(self.unpack(v, depth + 1) for v in body))
        if tag in ("handle", "method", "callback"):
            return self.resolve(data)
        raise WireError(f"a value of an unknown form ({tag!r})")

    def tensor(self, row) -> torch.Tensor:
        if type(row) is not int or not 0 <= row < len(self.descriptors):
            raise WireError(f"a reference to tensor {row!r}, which the message does not hold")
        if row in self.decoded:
            return self.decoded[row]
        self.decoded[row] = None  # a descriptor whose .grad names itself finds it half-made: refused below
        t = self._build(self.descriptors[row])
        self.decoded[row] = t
        return t

    def _build(self, d) -> torch.Tensor:
        if type(d) is not dict or d.get("dtype") not in DTYPES or not _sizes(d.get("shape")):
            raise WireError("a tensor whose descriptor has no known dtype or no shape")
        dtype, shape = DTYPES[d["dtype"]], d["shape"]
        device = str(d.get("device", "cpu"))
        buffer = d.get("buffer")
        if device == "meta":
            t = torch.empty(shape, dtype=dtype, device="meta")
        else:
            if type(buffer) is not int or not 0 <= buffer < len(self.buffers):
                raise WireError("a tensor whose bytes are not in the message")
            data = self.buffers[buffer]
            itemsize = torch.empty((), dtype=dtype).element_size()
            if len(data) != math.prod(shape) * itemsize:
                raise WireError(f"a tensor of shape {shape} and dtype {d['dtype']} with {len(data):,} bytes")
            t = torch.frombuffer(data, dtype=dtype).reshape(shape) if data else torch.empty(shape, dtype=dtype)
            if device != "cpu":
                try:
                    t = t.to(device)
                except (RuntimeError, AssertionError) as exc:
                    raise WireError(f"a tensor on {device!r}, a device not here ({exc})") from None
        requires_grad = d.get("requires_grad") is True and t.is_floating_point()
        if self.leaves:
            return t.requires_grad_(requires_grad)
        if d.get("parameter") is True:
            t = torch.nn.Parameter(t, requires_grad=requires_grad)
        if "grad" in d:
            grad = self.tensor(d["grad"])
            if grad is None or grad.shape != t.shape or not t.requires_grad:
                raise WireError("a tensor whose .grad does not fit it")
            t.grad = grad
        if type(d.get("oid")) is int:
            t._kata_oid = d["oid"]
        return t

    def requires_grad(self, t: torch.Tensor) -> bool:
        """Whether the side that sent `t` (a tensor of this message) said it requires grad there."""
        row = next((r for r, v in self.decoded.items() if v is t), None)
        return row is not None and self.descriptors[row].get("requires_grad") is True


def _sizes(shape) -> bool:
    return (type(shape) is list and len(shape) <= MAX_DIMS and all(type(n) is int and 0 <= n < 2**40 for n in shape)
            and math.prod(shape) < 2**40)


def oid(t: torch.Tensor) -> int | None:
    """Which object the student's side says `t` was there (the same number, the same tensor), if it said."""
    return getattr(t, "_kata_oid", None)
