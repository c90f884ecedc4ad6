"""`Service`: what one `keel serve` process holds, shared by the API and the dashboard.

One `Engine` (watching the brain, so an edited file reaches the next request), the model
that answers turns (None: turns are prepared only), the runs backend, the bearer token
(None: no token asked), the bytes a request's body may hold, and what the seed did at
start. Each request asks for the brain
through `brain()`, which logs the files a new snapshot could not load — once per
snapshot, so a broken file is never silent and never floods the log — and holds
`database()` around its Engine calls.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from keel.brain.snapshot import Brain
from keel.log import logger
from keel.runtime.engine import Engine
from keel.runtime.models import ModelClient
from keel.web.limits import MAX_BODY_BYTES
from keel.web.runs import NoRuns, RunsBackend

if TYPE_CHECKING:  # the telegram extra is loaded only by a server given a webhook secret
    from keel.telegram.webhook import Webhooks

LOG = logger("serve")


@dataclass(frozen=True, slots=True, kw_only=True)
class Seeded:
    """What the seed did when the server started: steps played, or why none were."""

    played: int = 0
    note: str = ""


class Service:
    """The engine, the model, the runs, the token and the body bound of one server
    process."""

    def __init__(
        self,
        engine: Engine,
        *,
        model: ModelClient | None = None,
        model_spec: str = "none",
        runs: RunsBackend | None = None,
        token: str | None = None,
        seeded: Seeded | None = None,
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        self.engine = engine
        self.model = model
        self.model_spec = model_spec
        self.runs: RunsBackend = runs if runs is not None else NoRuns()
        self.token = token or None
        self.seeded = seeded or Seeded()
        self.max_body = max_body  # the bytes a request's body may hold (`keel.web.intake`)
        # Telegram's webhooks (`keel.telegram.webhook.Webhooks`), when a secret was given.
        self.telegram: Webhooks | None = None
        self._seen: Brain | None = None
        self._lock = threading.Lock()
        # SQLite has one writer at a time, and every store transaction takes the write lock
        # (BEGIN IMMEDIATE). Threads that wait for it inside SQLite poll with growing sleeps,
        # so under load most of the time goes to sleeping; queueing them here on a lock
        # hands the database over the moment it is free. PostgreSQL needs no such queue.
        self._sqlite_writer = threading.Lock() if engine.url.startswith("sqlite") else None
        self._writer: AbstractContextManager[object] = self._sqlite_writer or nullcontext()

    def prepares_on_loop(self, *, dry_run: bool) -> bool:
        """Whether a turn is prepared right on the event loop rather than in a worker thread.

        On SQLite turns are prepared one at a time anyway (one writer), and no model is
        waited for when none answers (or the turn is a dry run): the work is all CPU under
        one lock, and handing it to a thread and back cost a fifth of the service's turns
        per second with 8 clients (bench/service_load.py). A model call, or PostgreSQL's
        concurrent writers, keep their thread.
        """
        return self._sqlite_writer is not None and (self.model is None or dry_run)

    @contextmanager
    def turn_on_loop(self, *, dry_run: bool) -> Iterator[bool]:
        """True, holding the database, when this turn is to be prepared on the event loop.

        Only when the database is free at once: a long call holding it in a thread (a
        what-if over a week of turns) must not stop the event loop, and with it every
        other request, until it ends — the turn then waits in a thread like any other.
        """
        writer = self._sqlite_writer
        if writer is None or not self.prepares_on_loop(dry_run=dry_run):
            yield False
            return
        if not writer.acquire(blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            writer.release()

    def database(self) -> AbstractContextManager[object]:
        """Hold this around Engine calls: one at a time on SQLite, no wait on PostgreSQL."""
        return self._writer

    def brain(self) -> Brain:
        """The brain as it is now; a snapshot with files that did not load is logged once."""
        brain = self.engine.brain
        if brain is self._seen:
            return brain
        with self._lock:
            if brain is not self._seen:
                self._seen = brain
                for skip in brain.skips:
                    LOG.warning("brain file skipped: %s", skip)
        return brain
