"""The private channel between Keel and a code worker: length-prefixed JSON frames.

The channel is a socket pair made for the worker alone, never its stdout or stderr: brain
code may print, and what it prints must not be taken for an answer nor reach Keel's own
output. A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON, one object.

Keel → worker::

    {"op": "hello", "root": "/abs/brain", "keel": pid, "group": pgid,
     "network": bool}                                            first, once
    {"op": "calls", "shared": [...], "calls": [{"id", "kind", "path", "deadline", "args",
                                               "refs"?}, ...]}
    {"op": "answer", "id", "seq", "deadline", and one of: "value",
     "error": {"type", "said", "terminal"}, "cancel": why}    to a pipeline's ask
    {"op": "rows", "id", "seq", and one of: "rows": [{...}, ...],
     "error": {"type", "said"}}                                to a render's query

worker → Keel::

    {"op": "ready", "notes"?: [...]}     after start-up (notes: limits it could not set)
    {"op": "done", "id", "log": [...], "line"?, and one of: "value", "absent",
     "unplain", "too_large", "raised": {"type", "said", "line"},
     "terminal": {"said", "line"}, "load": {"reason", "line"}}
    {"op": "overdue", "id", "line", "loading"?}   still running at its deadline (line:
                                          where; loading: in the file's module level)
    {"op": "finished", "id"}              an overdue call has returned after all
    {"op": "ask", "id", "seq", "name", "args", "at"}   a pipeline's ctx call
    {"op": "query", "id", "seq", "sql", "params"}      a render's ctx.query

A pipeline (kind `pipeline`) asks while it runs: `seq` numbers its asks, `at` is when its
clock stopped; the answer's `deadline` is its new one (the clock runs again). A render's
`query` does not stop its clock: Keel runs the statement within what is left of it.

`refs` names arguments sent once for the whole batch: `{"turn": 0}` is `shared[0]` (a
turn's input, asked of ten contexts, crosses once). `deadline` is a `time.monotonic()`
reading: that clock is the machine's, the same in both processes.

Standard library only: the worker imports this before any brain code, and fast.
"""

from __future__ import annotations

import json
import struct
from typing import Any

HEADER = struct.Struct(">I")
# One answer may be large (a render's text) but not unbounded: past this it is refused.
MAX_FRAME = 32 * 1024 * 1024
# How much one read asks for: a larger buffer is mapped and unmapped on every read.
RECV_BYTES = 64 * 1024


class FrameTooLarge(ValueError):
    """A message that would not fit one frame."""

    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(f"a frame of {size} bytes is over the {MAX_FRAME} byte limit")


class BrokenChannel(ValueError):
    """The other side sent something that is not a frame of this protocol."""


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def frame(message: dict[str, Any]) -> bytes:
    """One message as a frame; `FrameTooLarge` when it is over the limit."""
    body = _ENCODER.encode(message).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(len(body))
    return HEADER.pack(len(body)) + body


class Frames:
    """Cuts a byte stream into messages, however the bytes arrive."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Add bytes; return every message now complete, in order."""
        self._buffer += data
        messages: list[dict[str, Any]] = []
        while len(self._buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME:
                raise BrokenChannel(f"a frame announces {size} bytes, over the limit")
            end = HEADER.size + size
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[HEADER.size : end])
            del self._buffer[:end]
            try:
                message = json.loads(body)
            except ValueError as exc:
                raise BrokenChannel(f"a frame is not JSON: {exc}") from None
            if not isinstance(message, dict):
                raise BrokenChannel("a frame is not a JSON object")
            messages.append(message)
        return messages
