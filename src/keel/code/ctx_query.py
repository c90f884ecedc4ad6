"""`ctx.query(sql, params)` inside a worker: the statement goes to Keel, the rows come back.

A worker holds no database connection and no connection string. `render(entity, ctx)`
reads the brain's database by asking Keel over the worker's channel: a `query` message
with the statement and its parameters, answered by a `rows` message (see
`keel.code.protocol`). Keel runs the statement in the turn's own transaction, read only,
and in a room pinned to a tenant only over that tenant's rows (`keel.state.queries`).

The call's clock keeps running while Keel reads: a query counts against the render's
`codeTimeoutMs`, and Keel bounds the statement by what is left of it. Parameters are
plain values (str, int, float, bool, None), by name (`:name` with a dict) or in order (a
list); rows come back as dicts of plain values. A statement Keel refuses, or that the
database rejects, raises `CallFailed` in brain code, with Keel's reason and `.call`
"query".

Standard library only, like the rest of what a worker imports before brain code.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from keel.code.define import CallFailed
from keel.code.protocol import FrameTooLarge, frame

_PLAIN = (str, int, float, bool, type(None))
# How long past its deadline a statement is waited for if the worker cannot say it passed.
_LATE_S = 1.0


class QueryLink:
    """One render call's `ctx.query`: sends each statement to Keel and waits for its rows.

    `send` writes a message to Keel; `deliver` is called from the worker's reading thread
    with each answer. Several threads of one call may query at once.
    """

    def __init__(
        self, ident: int, *, send: Callable[[dict[str, Any]], None], deadline: float
    ) -> None:
        self._ident = ident
        self._send = send
        self._deadline = deadline
        self._lock = threading.Lock()
        self._seq = 0
        self._waiting: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}

    def query(
        self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run one read-only statement in Keel; its rows as dicts (column name → value)."""
        if not isinstance(sql, str):
            raise TypeError(f"ctx.query takes the statement as a str, not {type(sql).__name__}")
        plain = _plain_params(params)
        event = threading.Event()
        answer: list[dict[str, Any]] = []
        with self._lock:
            self._seq += 1
            seq = self._seq
        message = {"op": "query", "id": self._ident, "seq": seq, "sql": sql, "params": plain}
        try:
            frame(message)  # before it is sent: a message that cannot go fails here alone
        except FrameTooLarge as exc:
            raise ValueError(f"ctx.query's statement and parameters are too large: {exc}") from None
        with self._lock:
            self._waiting[seq] = (event, answer)
        try:
            self._send(message)
            # The worker wakes this wait when the call's time is up (`abort`); the clock is
            # only in case it cannot.
            event.wait(max(0.0, self._deadline - time.monotonic()) + _LATE_S)
        finally:
            with self._lock:
                self._waiting.pop(seq, None)
        if not answer:
            raise TimeoutError("the call's deadline passed while ctx.query waited for rows")
        (reply,) = answer
        error = reply.get("error")
        if error is not None:
            raise CallFailed(str(error.get("said")), call="query", kind=str(error.get("type")))
        rows: list[dict[str, Any]] = reply.get("rows", [])
        return rows

    def abort(self) -> None:
        """The call's time is up: every statement it waits for fails now."""
        with self._lock:
            waiting = list(self._waiting.values())
        for event, _answer in waiting:
            event.set()

    def deliver(self, message: Mapping[str, Any]) -> None:
        """Keel's answer to one statement (a late one, for a query given up on, is dropped)."""
        with self._lock:
            waiting = self._waiting.get(message.get("seq", -1))
        if waiting is None:
            return
        event, answer = waiting
        answer.append(dict(message))
        event.set()


def _plain_params(params: object) -> dict[str, Any] | list[Any] | None:
    if params is None:
        return None
    if isinstance(params, Mapping):
        out: dict[str, Any] = {}
        for key, value in params.items():
            if not isinstance(key, str):
                raise TypeError(f"ctx.query's parameter names are str, not {key!r}")
            out[key] = _plain(value, repr(key))
        return out
    if isinstance(params, Sequence) and not isinstance(params, str | bytes):
        return [_plain(value, str(index)) for index, value in enumerate(params)]
    raise TypeError(
        f"ctx.query takes its parameters as a dict or a list, not {type(params).__name__}"
    )


def _plain(value: object, name: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"ctx.query parameter {name} is {value}: a number must be finite")
    if isinstance(value, _PLAIN):
        return value
    kind = type(value).__name__
    fix = " — pass value.isoformat()" if hasattr(value, "isoformat") else ""
    raise TypeError(
        f"ctx.query parameter {name} is a {kind}: parameters are str, int, float, bool or None{fix}"
    )
