"""A batch of calls in flight: each call's deadline, its reply once known, and who waits.

The caller that handed the batch over waits on `done`, which is set when the last call of
the batch has its reply — from the worker, from a deadline, or from a worker's death.

A pipeline is a call that talks back: it sends `ask` messages (its `ctx` calls) that its
caller answers (`keel.code.pipelines`). While an ask waits for its answer, the call is
*paused*: its deadline is infinite, and `left_s` keeps the time it had left, so the time
Keel takes to answer never counts against the pipeline. The caller waits on `wake`, set
by each ask and by the reply.

A render batch may read the database (`ctx.query`): each statement its calls send waits in
`queries` until the batch's caller — the thread that holds the turn's transaction — runs
it with `reader` and answers. Its clock keeps running meanwhile.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keel.code.values import Job, Reply

Reader = Callable[[str, Mapping[str, Any] | Sequence[Any] | None, float], list[dict[str, Any]]]
"""Runs one `ctx.query` statement for a render, in Keel: (sql, params, deadline) → rows as
dicts of JSON values; raises a `KeelError` whose message brain code sees."""


@dataclass(slots=True, eq=False)
class Pending:
    """One call of a batch: `deadline` is on the monotonic clock, shared by every process."""

    id: int
    job: Job
    deadline: float
    batch: Batch
    reply: Reply | None = None
    # Failed because its worker died while running other calls too: maybe not its fault.
    crowded: bool = False
    # A pipeline's asks not yet taken by its caller (None: the call asks nothing).
    asks: deque[dict[str, Any]] | None = None
    paused: bool = False
    left_s: float = 0.0
    # Its worker was stopped while it waited for an answer: it only needs to run again.
    moved: bool = False
    # Its caller has gone: an ask from now on is answered by stopping the pipeline.
    abandoned: bool = False

    def resolve(self, reply: Reply) -> None:
        """Give the call its reply (once); the batch is done with its last one."""
        if self.reply is not None:
            return
        self.reply = reply
        self.batch.left -= 1
        if self.batch.left == 0:
            self.batch.done.set()
        self.batch.wake.set()

    def pause(self, at: float) -> None:
        """Stop the call's clock from `at` (when the worker asked) until it is answered."""
        if self.paused:
            return
        self.left_s = max(0.0, self.deadline - at)
        self.deadline = math.inf
        self.paused = True

    def resume(self, now: float) -> float:
        """Start the clock again with the time that was left; the new deadline."""
        if self.paused:
            self.deadline = now + self.left_s
            self.paused = False
        return self.deadline

    def wire(self, shared: dict[int, int]) -> dict[str, Any]:
        """The call as the channel carries it; `shared` maps an argument object (by id) to
        its place in the batch's shared list, for arguments several calls pass."""
        args: dict[str, Any] = {}
        refs: dict[str, int] = {}
        for key, value in self.job.args.items():
            if id(value) in shared:
                refs[key] = shared[id(value)]
            else:
                args[key] = value
        call: dict[str, Any] = {"id": self.id, "kind": self.job.kind, "path": self.job.path}
        call |= {"deadline": self.deadline, "args": args}
        if refs:
            call["refs"] = refs
        return call


@dataclass(slots=True, eq=False)
class Batch:
    """Calls handed over together; `done` is set once every one has its reply."""

    pending: list[Pending] = field(default_factory=list)
    left: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    # Set by every reply, every ask and every query: the caller waits for any of them.
    wake: threading.Event = field(default_factory=threading.Event)
    # Runs the batch's `ctx.query` statements (None: its calls have no database).
    reader: Reader | None = None
    # Statements sent by its calls, each with the call, waiting for the caller to run them.
    queries: deque[tuple[Pending, dict[str, Any]]] = field(default_factory=deque)

    def message(self) -> dict[str, Any]:
        """The `calls` message: an argument object passed by several calls is sent once."""
        seen: dict[int, Any] = {}
        repeated: dict[int, Any] = {}
        for pending in self.pending:
            for value in pending.job.args.values():
                if isinstance(value, dict | list):
                    (repeated if id(value) in seen else seen)[id(value)] = value
        shared = {key: index for index, key in enumerate(repeated)}
        return {
            "op": "calls",
            "shared": list(repeated.values()),
            "calls": [p.wire(shared) for p in self.pending],
        }
