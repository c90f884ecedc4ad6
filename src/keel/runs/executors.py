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
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from keel.runs.app import APP_VERSION, STALE_S, Runtime
from keel.store.run_values import ExecutorRow


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
