"""A batch of calls in flight: each call's deadline, its reply once known, and who waits.

The caller that handed the batch over waits on `done`, which is set when the last call of
the batch has its reply — from the worker, from a deadline, or from a worker's death.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from keel.code.values import Job, Reply


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

    def resolve(self, reply: Reply) -> None:
        """Give the call its reply (once); the batch is done with its last one."""
        if self.reply is not None:
            return
        self.reply = reply
        self.batch.left -= 1
        if self.batch.left == 0:
            self.batch.done.set()

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
