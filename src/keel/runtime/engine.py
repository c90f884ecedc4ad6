"""`Engine`: the one object an application, the CLI, the server and the MCP server hold.

It owns the live brain (a `BrainSource`, so an edited file reaches the next turn), the
brain's database (state views and Keel's own tables behind one URL), the token counter
and the tool registry, and offers what a caller does with a brain:

    with Engine("examples/brain") as engine:
        prepared, assembly = engine.prepare(request)     # what the turn carries, its input
        outcome = engine.run(request, model)              # ... and the model's answer
        engine.send(conversation, "Tonight: Whiplash", run=run, about_entity="tt2582802")
        engine.bind(context="ticket", entity="T-481", chat="tg:chat:-100...")
        engine.open(request, "policy")                    # context_open, as the agent would
        report = engine.doctor()

The database is connected on first use (a new SQLite file gets the brain's `state/*.sql`),
and Keel's tables are migrated the first time the store is used; `doctor()` alone never
migrates. An `Engine` is safe to share between threads.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Engine as Database

from keel.assemble.values import Assembly, ToolCall
from keel.brain.snapshot import Brain
from keel.brain.source import BrainSource
from keel.brain.specs import ReachEntry, RoleSpec
from keel.doctor import Report, run_doctor
from keel.errors import StoreError
from keel.link.gather import resolve_role
from keel.link.values import Conversation, Origin, RunRef, TurnRequest
from keel.runtime.loop import DEFAULT_MAX_STEPS, TurnOutcome, run_turn
from keel.runtime.models import ModelClient
from keel.state.database import apply_sql, connect, creates, default_url
from keel.state.schema import read_schema
from keel.store.store import Store
from keel.tokens import Estimator, TokenCounter
from keel.tools import TOOLS, Registry, origin_of, record_send
from keel.turn.assembly import prepare_and_assemble
from keel.turn.prepared import PreparedTurn, Session

# The bot a binding command acts as when none is named (its role comes from access.yaml).
DEFAULT_BOT = "cli"


class Engine:
    """A brain, its database, a token counter and the tools: everything a turn needs."""

    def __init__(
        self,
        brain: str | Path,
        db: str | None = None,
        *,
        counter: TokenCounter | None = None,
        tools: Registry = TOOLS,
        watch: bool = True,
    ) -> None:
        """Open the brain at `brain` (a `UsageError` if it is not a brain directory).

        `db` is a database URL (SQLite file or `postgresql://...`); by default the brain's
        own SQLite file, `.keel/keel.db`. `watch=False` follows file edits by stat probes
        instead of a watcher thread (a short-lived process needs neither).
        """
        self.source = BrainSource(Path(brain), watch=watch)
        self.url = db or default_url(self.source.root)
        self.counter: TokenCounter = counter or Estimator()
        self.tools = tools
        self._lock = threading.Lock()
        self._database: Database | None = None
        self._created = False
        self._store: Store | None = None

    # -- what it holds -----------------------------------------------------------------

    @property
    def brain(self) -> Brain:
        """The brain as it is now on disk (the same snapshot while nothing changed)."""
        return self.source.current()

    @property
    def database(self) -> Database:
        """The brain's database, connected on first use."""
        with self._lock:
            if self._database is None:
                self._created = creates(self.url)
                self._database = connect(self.url, self.brain)
            return self._database

    @property
    def store(self) -> Store:
        """Keel's tables in the brain's database, migrated on first use."""
        database = self.database
        with self._lock:
            if self._store is None:
                store = Store(database)
                store.migrate()
                self._store = store
            return self._store

    # -- turns -------------------------------------------------------------------------

    def prepare(
        self, request: TurnRequest, *, session: Session | None = None
    ) -> tuple[PreparedTurn, Assembly]:
        """Prepare and record one turn, and assemble its model input (no model call).

        Raises `FitOverflow` (recording nothing) when the input cannot fit.
        """
        return prepare_and_assemble(
            self.brain, self.store, request, self.counter, self.tools.for_role, session=session
        )

    def run(
        self,
        request: TurnRequest,
        model: ModelClient,
        *,
        session: Session | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> TurnOutcome:
        """Prepare one turn, ask the model, run its tool calls, record its answer."""
        return run_turn(
            self.brain,
            self.store,
            request,
            model,
            self.counter,
            self.tools,
            session=session,
            max_steps=max_steps,
        )

    # -- what moves in chats -----------------------------------------------------------

    def send(
        self,
        conversation: Conversation,
        text: str,
        *,
        message_id: str | None = None,
        at: datetime | None = None,
        run: RunRef | None = None,
        entity: str | None = None,
        reach: tuple[ReachEntry, ...] | None = None,
        about_entity: str | None = None,
        about_context: str | None = None,
        card: bool = False,
    ) -> Origin:
        """Record a message a bot sent, with the origin a reply to it will bring back.

        Raises `Refused` when a run would send unkeyed what can only come back keyed.
        """
        origin = origin_of(
            self.brain,
            conversation=conversation,
            message_id=message_id or uuid.uuid4().hex,
            sent_at=at or datetime.now(UTC),
            run=run,
            entity=entity,
            reach=reach,
            about_entity=about_entity,
            about_context=about_context,
            pending_card=card,
        )
        with self.store.transaction() as tx:
            record_send(tx, origin, text)
        return origin

    def bind(
        self,
        *,
        context: str,
        chat: str,
        entity: str | None = None,
        thread: str | None = None,
        bot: str | None = None,
        role: str | None = None,
    ) -> str:
        """`context_bind`, as the role of `bot` in `chat` (or `role`) would call it."""
        arguments = {"context": context, "entity": entity, "chat": chat, "thread": thread}
        return self._tool(chat, thread, bot, role, "context_bind", {**arguments, "bot": bot})

    def unbind(
        self,
        *,
        context: str,
        chat: str,
        thread: str | None = None,
        bot: str | None = None,
        role: str | None = None,
    ) -> str:
        """`context_unbind`: remove a binding made by `bind` (or by the tool)."""
        arguments = {"context": context, "chat": chat, "thread": thread, "bot": bot}
        return self._tool(chat, thread, bot, role, "context_unbind", arguments)

    def open(self, request: TurnRequest, context: str, entity: str | None = None) -> str:
        """`context_open` in the turn `request` describes: the block it reads at once."""
        arguments = {"name": context, "entity": entity}
        return self.call(request, "context_open", arguments)

    def call(self, request: TurnRequest, tool: str, arguments: Mapping[str, Any]) -> str:
        """Call one of the registry's tools as the turn's role would; `Refused` says why not.

        Arguments that are None are left out, as a model leaves out what it does not set.
        """
        role = self.role_for(request)
        given = {k: v for k, v in arguments.items() if v is not None}
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=tool, arguments=given)
        return self.tools.execute(self.brain, self.store, request, role, call)

    def role_for(self, request: TurnRequest) -> RoleSpec:
        """The role a turn runs as: the one named, the run's, else access.yaml's rule's."""
        return resolve_role(self.brain, request)

    def _tool(
        self,
        chat: str,
        thread: str | None,
        bot: str | None,
        role: str | None,
        tool: str,
        arguments: Mapping[str, Any],
    ) -> str:
        conversation = Conversation(bot=bot or DEFAULT_BOT, chat=chat, thread=thread)
        request = TurnRequest(conversation=conversation, now=datetime.now(UTC), role=role)
        return self.call(request, tool, arguments)

    # -- the brain itself --------------------------------------------------------------

    def doctor(self) -> Report:
        """Check the brain; the view checks need the database, and say so when it is out
        of reach."""
        brain = self.brain
        try:
            schema, note = read_schema(self.database), None
        except StoreError as exc:
            schema, note = None, str(exc)
        return run_doctor(brain, schema=schema, db_note=note)

    def apply_state(self) -> tuple[str, ...]:
        """Apply the brain's `state/*.sql` to its database; the files' paths.

        A SQLite file this engine created already got them when it was created.
        """
        database = self.database
        files = self.brain.state_sql
        if not self._created:
            apply_sql(database, files)
        return tuple(f.path for f in files)

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the brain's files and close the database's connections."""
        self.source.close()
        with self._lock:
            if self._database is not None:
                self._database.dispose()
                self._database = None
                self._store = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
