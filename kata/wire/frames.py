"""Messages between the judge and the student's process: a JSON header, then raw buffers, over a socket.

One message on the stream is

    4 bytes   the header's length n (big-endian)
    n bytes   the header, UTF-8 JSON: an object, whose "buffers" (if any) lists each buffer's length
    ...       the buffers, one after the other

Nothing is unpickled and nothing is allocated before its size is checked against the caps of the side
that reads: a header of at most `max_header` bytes, buffers of `max_total` bytes in all. A message that
breaks them, a header that is not a JSON object, or a stream that ends mid-message is a `WireError`;
nothing after it is read. Imports no torch: tensors become buffers in `kata.wire.values`.
"""

from __future__ import annotations

import json
import select
import socket
import time

HEADER_LENGTH = 4
DEFAULT_MAX_HEADER = 16 * 1024 * 1024
DEFAULT_MAX_TOTAL = 1024 * 1024 * 1024


class WireError(Exception):
    """The other side broke the protocol: a malformed, oversized or cut-short message."""


class Closed(WireError):
    """The other side closed its end (or died) before a message began."""


class TimedOut(Exception):
    """No whole message arrived before the deadline."""


class Channel:
    """One end of a connected stream socket carrying messages (see the module's docstring)."""

    def __init__(self, sock: socket.socket, *, max_header: int = DEFAULT_MAX_HEADER,
                 max_total: int = DEFAULT_MAX_TOTAL):
        self.sock = sock
        self.max_header, self.max_total = max_header, max_total
        self._pending = bytearray()  # bytes received and not yet read: a message is mostly one recv

    def send(self, header: dict, buffers: list = ()) -> None:
        """Send `header` and the `buffers` (anything with the buffer protocol) as one message, in as few
        system calls as the kernel takes them."""
        views = [memoryview(b).cast("B") for b in buffers]
        if views:
            header = {**header, "buffers": [v.nbytes for v in views]}
        data = json.dumps(header, separators=(",", ":")).encode("utf-8")
        parts = [memoryview(len(data).to_bytes(HEADER_LENGTH, "big") + data), *(v for v in views if v.nbytes)]
        while parts:
            sent = self.sock.sendmsg(parts)
            while parts and sent >= parts[0].nbytes:
                sent -= parts[0].nbytes
                parts.pop(0)
            if parts and sent:
                parts[0] = parts[0][sent:]

    def receive(self, deadline: float | None = None) -> tuple[dict, list[bytearray]]:
        """The next message: its header and buffers. `deadline` (time.monotonic()) bounds the wait for all of
        it: `TimedOut` past it. `Closed` if the other end closed before a message began."""
        head = self._exactly(HEADER_LENGTH, deadline, first=True)
        size = int.from_bytes(head, "big")
        if size > self.max_header:
            raise WireError(f"a message header of {size:,} bytes (at most {self.max_header:,})")
        try:
            header = json.loads(self._exactly(size, deadline).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise WireError(f"a message header that is not JSON ({exc})") from None
        if not isinstance(header, dict):
            raise WireError("a message header that is not an object")
        lengths = header.pop("buffers", [])
        if not isinstance(lengths, list) or not all(type(n) is int and n >= 0 for n in lengths):
            raise WireError("a message whose buffer lengths are not a list of sizes")
        if sum(lengths) > self.max_total:
            raise WireError(f"a message of {sum(lengths):,} bytes of buffers (at most {self.max_total:,})")
        return header, [self._exactly(n, deadline) for n in lengths]

    def _exactly(self, n: int, deadline: float | None, first: bool = False) -> bytearray:
        """The next `n` bytes: what is pending first, then from the socket (whole chunks at a time, so that a
        small message costs one system call)."""
        if len(self._pending) >= n:
            taken = self._pending[:n]
            del self._pending[:n]
            return taken
        buffer = bytearray(n)
        got = len(self._pending)
        buffer[:got] = self._pending
        self._pending.clear()
        view = memoryview(buffer)
        while got < n:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                    raise TimedOut()
            try:
                if n - got >= _CHUNK:
                    count = self.sock.recv_into(view[got:], n - got)
                else:  # a small remainder: read a whole chunk, keep what follows it for the next read
                    chunk = self.sock.recv(_CHUNK)
                    count = min(len(chunk), n - got)
                    view[got:got + count] = chunk[:count]
                    self._pending += chunk[count:]
                    count = len(chunk) and count
            except ConnectionResetError:
                count = 0
            if count == 0:
                if first and got == 0:
                    raise Closed("the other side closed the connection")
                raise WireError("the connection closed in the middle of a message")
            got += count
        return buffer

    def close(self) -> None:
        self.sock.close()


_CHUNK = 65536
