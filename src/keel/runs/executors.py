"""Which processes are alive, and finishing the runs of those that died.

DBOS recovers a dead process's unfinished workflows only when a process with the same
executor id starts again, and it cannot tell a dead process from a live one. Keel gives
every process its own executor id and records it (`keel_executors`), with a beat every
few seconds; a process counts as dead when it is not recorded (it stopped, or never said),
when it ran on this host and its pid is gone, or when its last beat is older than
`STALE_S`. A live process hands a dead one's pending workflows back to DBOS's queue
(`DBOS._recover_pending_workflows`, which only takes rows still pending on that executor:
two processes recovering the same one re-enqueue it once), and one live process runs each.

Resuming the runs of a process that is in fact alive would run them twice at once, so the
rules above err on the side of alive: a process on another host has `STALE_S` to beat.

A run is recorded `pending` before its workflow is journaled (`keel.runs.service`). One
whose process died between the two writes, or whose workflow ended without recording its
start, has nothing left to run it: `settle_unstarted` records it failed, with the reason,
rather than leave it pending for ever.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from keel.log import logger
from keel.runs.app import APP_VERSION, STALE_S, Runtime
from keel.store.run_values import ExecutorRow

LOG = logger("runs")
# DBOS's statuses of a workflow that will not run again.
TERMINAL = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
# Pending runs looked at in one beat; any beyond wait for the next.
PENDING_LOOKED_AT = 100


def is_dead(row: ExecutorRow | None, now: datetime, host: str) -> bool:
    """Whether an executor counts as dead (see the module docstring)."""
    if row is None:
        return True
    if row.host == host and not _alive(row.pid):
        return True
    return now - row.seen_at > timedelta(seconds=STALE_S)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def dead_owners(
    owners: set[str], executors: Mapping[str, ExecutorRow], me: str, now: datetime
) -> list[str]:
    """The owners of pending workflows that are dead, this process never among them."""
    host = socket.gethostname()
    return sorted(o for o in owners if o != me and is_dead(executors.get(o), now, host))


def recover_dead(runtime: Runtime) -> list[str]:
    """Hand the pending workflows of dead executors back to DBOS; their ids."""
    from dbos import DBOS

    pending = DBOS.list_workflows(
        status="PENDING", app_version=APP_VERSION, load_input=False, load_output=False
    )
    owners = {w.executor_id for w in pending if w.executor_id}
    if not owners:
        return []
    store = runtime.engine.store
    with store.transaction() as tx:
        known = tx.executors()
    dead = dead_owners(owners, known, runtime.executor, datetime.now(UTC))
    if not dead:
        return []
    handles = DBOS._recover_pending_workflows(dead)
    with store.transaction() as tx:
        tx.remove_executors([d for d in dead if d in known])
    return [h.get_workflow_id() for h in handles]


def settle_unstarted(runtime: Runtime) -> list[str]:
    """Record failed the pending runs nothing will start (see the module docstring); their
    ids. A pending run of a live process is left alone: it is between its two writes."""
    from dbos import DBOS

    store = runtime.engine.store
    with store.transaction() as tx:
        pending = tx.runs(status="pending", limit=PENDING_LOOKED_AT)
        known = tx.executors() if pending else {}
    now, host = datetime.now(UTC), socket.gethostname()
    settled = []
    for row in pending:
        workflow = DBOS.get_workflow_status(row.id)
        if workflow is not None and workflow.status in TERMINAL:
            why = f"its workflow ended ({workflow.status}) without recording its start"
        elif workflow is None and row.executor != runtime.executor:
            if not is_dead(known.get(row.executor or ""), now, host):
                continue
            why = f"its process ({row.executor}) ended before its workflow started"
        else:
            continue  # journaled: it runs, or `recover_dead` hands it to a live process
        error = f"{why} — start it again"
        with store.transaction() as tx:
            again = tx.run(row.id)
            if again is not None and again.status == "pending":
                tx.set_run_status(row.id, "failed", now, error=error)
                settled.append(row.id)
                LOG.warning("run %s failed: %s", row.id, error)
    return settled
