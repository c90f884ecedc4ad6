"""A render's `ctx.query`, in Keel: from the worker's `query` message to the turn's reader
and back as a `rows` message.

A render runs while its turn holds a transaction open (`keel.turn.prepare`), and a query
must see what that transaction sees — the views' rows, and what the turn wrote before —
without a second connection waiting on the first (SQLite has one writer). So the statement
is run by the thread that holds the transaction: the caller of the render batch, which
waits for the batch's answers anyway (`keel.code.pool`). The worker's message waits in
the batch (`queried`, wherever the message was read) until that thread picks it up
(`serve_queries`) and runs it with the batch's `reader` (`keel.state.queries` for a turn).

The call's clock keeps running: the reader is given the call's deadline, and a statement
still running there is stopped by the database. What the reader refuses or the database
rejects (a `KeelError`) goes back to brain code as `CallFailed`, with its message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keel.code.batches import Batch, Pending, Reader
from keel.code.protocol import FrameTooLarge
from keel.errors import KeelError

if TYPE_CHECKING:
    from keel.code.workers import Worker, Workers

NO_DATABASE = (
    "ctx.query cannot read the database: this render was called without one (Keel's turns "
    "give it theirs)"
)


def queried(workers: Workers, worker: Worker, message: dict[str, Any]) -> None:
    """A statement has arrived (the pool's lock is held): queue it for its batch's caller."""
    pending = worker.running.get(message.get("id", -1))
    if pending is None or pending.reply is not None:
        return  # it has its answer (its time is up): the worker stops waiting too
    if pending.batch.reader is None:
        send_rows(workers, worker, _error(pending, message, "Refused", NO_DATABASE))
        return
    pending.batch.queries.append((pending, message))
    pending.batch.wake.set()


def serve_queries(
    batch: Batch, lock: threading.Lock, workers: Workers, wake: Callable[[], None]
) -> None:
    """Run the statements the batch's calls sent, in this thread, and answer each; one that
    waited past its call's answer is dropped (the call has gone)."""
    reader = batch.reader
    while reader is not None:
        with lock:
            if not batch.queries:
                return
            pending, message = batch.queries.popleft()
            if pending.reply is not None:
                continue
        answer = _run(reader, pending, message)
        with lock:
            worker = workers.holding(pending.id)
            if worker is None or pending.reply is not None:
                continue
            send_rows(workers, worker, answer)
            waiting = bool(worker.out)
        if waiting:
            wake()  # the pool's thread sends the rest when the socket takes it


def send_rows(workers: Workers, worker: Worker, answer: dict[str, Any]) -> None:
    """Send the answer to a statement (rows too large for one frame say so instead)."""
    try:
        worker.send(answer)
    except FrameTooLarge as exc:
        said = f"ctx.query's rows are too large: {exc} — select fewer rows or columns"
        head = {key: answer.get(key) for key in ("op", "id", "seq")}
        worker.send({**head, "error": {"type": "Refused", "said": said}})
    if worker.out:
        workers.watch(worker)


def _run(reader: Reader, pending: Pending, message: dict[str, Any]) -> dict[str, Any]:
    sql, params = message.get("sql"), message.get("params")
    if not isinstance(sql, str):
        return _error(pending, message, "Refused", "ctx.query takes the statement as a str")
    if params is not None and not isinstance(params, Mapping | Sequence):
        return _error(pending, message, "Refused", "ctx.query takes a dict or a list of values")
    try:
        rows = reader(sql, params, pending.deadline)
    except KeelError as exc:
        return _error(pending, message, type(exc).__name__, str(exc))
    return {"op": "rows", "id": pending.id, "seq": message.get("seq"), "rows": rows}


def _error(pending: Pending, message: dict[str, Any], kind: str, said: str) -> dict[str, Any]:
    """The answer to a statement that was not run: `CallFailed(said)` in brain code."""
    seq = message.get("seq")
    return {"op": "rows", "id": pending.id, "seq": seq, "error": {"type": kind, "said": said}}
