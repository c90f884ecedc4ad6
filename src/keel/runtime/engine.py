"""`Engine`: the one object an application, the CLI, the server and the MCP server hold.

It owns the live brain (a `BrainSource`, so an edited file reaches the next turn), the
brain's database (state views and Keel's own tables behind one URL), the token counter
and the tool registry, and offers what a caller does with a brain:

    with Engine("examples/brain") as engine:
        prepared, assembly = engine.prepare(request)     # what the turn carries, its input
        engine.prepare(request, dry_run=True)             # ... the same, recording nothing
        outcome = engine.run(request, model)              # ... and the model's answer
        answer = engine.turn(bot="nova", chat="tg:chat:...", text="hi", model=model)
        answer = await engine.aturn(bot=..., chat=..., text=..., model=async_model)
        engine.send(conversation, "Tonight: Whiplash", run=run, about_entity="tt2582802")
        engine.show_widget(conversation, "shopping")      # a list kept up to date in place
        engine.refresh_widgets()                          # ... edited where its lines changed
        engine.bind(context="ticket", entity="T-481", chat="tg:chat:-100...")
        engine.open(request, "policy")                    # context_open, as the agent would
        report = engine.doctor()
        engine.report("support", since="7d")             # agent_context, from the ledger
        engine.context("tg:chat:...")                     # /context: the chat's latest turn
        engine.explain(prepared.id)                        # why each context did or did not
        engine.what_if(["contexts.maxActive=5"])          # the window re-fitted, nothing kept

The database is connected on first use (a new SQLite file gets the brain's `state/*.sql`),
and Keel's tables are migrated the first time the store is used; `doctor()` alone never
migrates. An `Engine` is safe to share between threads.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Engine as Database

from keel.assemble.values import Assembly, Fit, ToolCall
from keel.brain.constitution import CodeAccess
from keel.brain.knobs import turn_knobs
from keel.brain.snapshot import Brain, SnapshotSource
from keel.brain.snapshot_cache import CachedSource
from keel.brain.source import BrainSource
from keel.brain.specs import ReachEntry, RoleSpec
from keel.budget.fit import Fitted
from keel.budget.rows import ViewRows
from keel.code.runner import CodeRunner
from keel.doctor import Report
from keel.errors import StateRefused, StoreError, UsageError
from keel.ledger import (
    DEFAULT_SINCE,
    AgentContext,
    ChatContext,
    Explanation,
    WhatIf,
    agent_context,
    apply_overrides,
    chat_context,
    explain,
    parse_overrides,
    parse_since,
    replay_fit,
    what_if,
)
from keel.ledger.checkup import checkup
from keel.link.bindings import tenant_of
from keel.link.gather import resolve_role
from keel.link.reach import no_role
from keel.link.values import Binding, Conversation, Link, Origin, RunRef, TurnRequest
from keel.runtime.answer import Answer, answer_of, turn_request
from keel.runtime.cards import answer_reply
from keel.runtime.loop import DEFAULT_MAX_STEPS, TurnOutcome, arun_turn, run_turn
from keel.runtime.models import AsyncModelClient, ModelClient
from keel.runtime.widgets import (
    ShownWidget,
    WidgetEdit,
    WidgetLeft,
    refresh_widgets,
    show_widget,
)
from keel.state.database import anchored, connect, default_url
from keel.state.files import StateFile, StateReport, apply_state, state_status
from keel.store.journal_values import TurnJournal
from keel.store.listing import LoggedMessage
from keel.store.run_values import CardRow
from keel.store.store import Store
from keel.tokens import Estimator, TokenCounter
from keel.tools import TOOLS, Registry, origin_of, record_send
from keel.turn.blocks import read_link_views
from keel.turn.prepare import prepare_and_assemble, read_history
from keel.turn.prepared import PreparedTurn, Session

# The bot a binding command acts as when none is named (its role comes from access.yaml).
DEFAULT_BOT = "cli"
# Turns listed, and messages shown, when no limit is named.
DEFAULT_LIMIT = 50
When = str | datetime  # a window's start: "7d", "24h", "30m", an ISO time, or a datetime


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
        cached: bool = False,
        source: SnapshotSource | None = None,
        code: CodeRunner | None = None,
    ) -> None:
        """Open the brain at `brain` (a `UsageError` if it is not a brain directory).

        `db` is a database URL (SQLite file or `postgresql://...`); by default the brain's
        own SQLite file, `.keel/keel.db`. `watch=False` follows file edits by stat probes
        instead of a watcher thread (a short-lived process needs neither). `cached=True`
        reads the brain once, through the snapshot cache in its `.keel/` folder
        (`keel.brain.snapshot_cache`: only files edited since the last process are parsed),
        and follows no edit after that: for a process that lives one command, such as a
        coding agent's prompt hook. A `source` given is used instead, as it follows the brain
        at `brain` (the prompt hook's warm server: `keel.brain.snapshot_cache.FollowedSource`).
        `code` is a runner of the brain's code already started, which the engine uses and
        closes (`keel doctor` starts it early, so its workers start while the rest loads).
        """
        self.source: SnapshotSource
        if source is not None:
            self.source = source
        elif cached:
            self.source = CachedSource(Path(brain))
        else:
            self.source = BrainSource(Path(brain), watch=watch)
        self.url = anchored(db) if db else default_url(self.source.root)
        self.counter: TokenCounter = counter or Estimator()
        self.tools = tools
        self._lock = threading.Lock()
        self._database: Database | None = None
        self._store: Store | None = None
        self._code: CodeRunner | None = code

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
        self, request: TurnRequest, *, session: Session | None = None, dry_run: bool = False
    ) -> tuple[PreparedTurn, Assembly]:
        """Prepare and record one turn, and assemble its model input (no model call).

        Raises `FitOverflow` (recording nothing) when the input cannot fit. A `dry_run`
        prepares and assembles the same way and records nothing (its turn has no id).
        """
        brain = self.brain  # once: the turn and its code read the same snapshot
        return prepare_and_assemble(
            brain,
            self.store,
            request,
            self.counter,
            self.tools.tools_for,
            session=session,
            dry_run=dry_run,
            code=self.code_for(brain),
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
        brain = self.brain
        return run_turn(
            brain,
            self.store,
            request,
            model,
            self.counter,
            self.tools,
            session=session,
            max_steps=max_steps,
            code=self.code_for(brain),
        )

    def turn(
        self,
        *,
        bot: str,
        chat: str,
        text: str,
        model: ModelClient,
        sender: str | None = None,
        thread: str | None = None,
        reply_to: str | None = None,
        role: str | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> Answer:
        """One incoming message, answered: `run` with the request built from what a chat
        bot knows (`keel.runtime.answer`). `model` comes from `keel.models`."""
        if not hasattr(model, "complete"):
            if hasattr(model, "acomplete"):
                raise UsageError(
                    f"{type(model).__name__} is an async model client — await "
                    "engine.aturn(...) with it, or give turn() a sync client (openai.OpenAI, "
                    "anthropic.Anthropic)"
                )
            raise UsageError(
                f"model is a {type(model).__name__}, not a model client — build one with "
                "keel.models: keel.models.openai(openai.OpenAI(), 'gpt-5'), "
                "keel.models.anthropic(...) or keel.models.scripted([...])"
            )
        request = turn_request(
            bot=bot,
            chat=chat,
            text=text,
            sender=sender,
            thread=thread,
            reply_to=reply_to,
            role=role,
        )
        return answer_of(self.run(request, model, max_steps=max_steps), request.conversation)

    async def aturn(
        self,
        *,
        bot: str,
        chat: str,
        text: str,
        model: AsyncModelClient | ModelClient,
        sender: str | None = None,
        thread: str | None = None,
        reply_to: str | None = None,
        role: str | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> Answer:
        """`turn` for an asyncio bot. With an async client (`openai.AsyncOpenAI`,
        `anthropic.AsyncAnthropic`) each model request is awaited on the event loop; the
        rest — preparation, tool calls, recording: database I/O through the sync store —
        runs in a worker thread (`asyncio.to_thread`), as does a sync client's request."""
        request = turn_request(
            bot=bot,
            chat=chat,
            text=text,
            sender=sender,
            thread=thread,
            reply_to=reply_to,
            role=role,
        )
        brain = self.brain
        outcome = await arun_turn(
            brain,
            self.store,
            request,
            model,
            self.counter,
            self.tools,
            max_steps=max_steps,
            code=self.code_for(brain),
        )
        return answer_of(outcome, request.conversation)

    # -- what moves in chats -----------------------------------------------------------

    def answer_card(self, request: TurnRequest) -> CardRow | None:
        """Decide the pending approval card a turn replies to, when its input says yes or
        no; the decided card (its run is woken by whoever can: `keel.runs`), or None for
        an ordinary turn. Such a reply is the person's decision, not a turn of its own;
        with `people:` in the brain, the turn's sender must be allowed to make it
        (`Refused`, recorded on the card, when not)."""
        if not request.reply_to or not request.input:
            return None
        return answer_reply(
            self.store,
            request.conversation,
            request.reply_to,
            request.input,
            brain=self.brain,
            sender=request.sender,
        )

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
            record_send(tx, self.brain, origin, text)
        return origin

    def show_widget(
        self,
        conversation: Conversation,
        context: str,
        *,
        message_id: str | None = None,
        at: datetime | None = None,
    ) -> ShownWidget:
        """Send `context`'s widget — its view's rows as numbered lines — to the room:
        the message's origin and text, and the earlier messages of it that it replaced
        (`keel.runtime.widgets`)."""
        return show_widget(
            self.brain,
            self.store,
            conversation,
            context,
            message_id=message_id or uuid.uuid4().hex,
            at=at or datetime.now(UTC),
        )

    def refresh_widgets(
        self, *, at: datetime | None = None
    ) -> tuple[tuple[WidgetEdit, ...], tuple[WidgetLeft, ...]]:
        """Re-read every live widget's lines; record an edit of each that changed. The
        edits, and the widgets left as last shown with why (a view that cannot be read)."""
        return refresh_widgets(self.brain, self.store, at or datetime.now(UTC))

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
        brain = self.brain  # once: the role, the tool and its code read the same snapshot
        role = resolve_role(brain, request)
        given = {k: v for k, v in arguments.items() if v is not None}
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=tool, arguments=given)
        return self.tools.execute(brain, self.store, request, role, call, code=self.code_for(brain))

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
        context = str(arguments["context"])
        actor = bot or (self._chat_bot(chat, context) if role is None else None) or DEFAULT_BOT
        conversation = Conversation(bot=actor, chat=chat, thread=thread)
        request = TurnRequest(conversation=conversation, now=datetime.now(UTC), role=role)
        return self.call(request, tool, arguments)

    def _chat_bot(self, chat: str, context: str) -> str | None:
        """A call made for every bot acts as a bot whose rule for `chat` names a role — a
        group rule for that chat, else a bot's default rule — the first by name whose role
        admits `context`, else the first: its role's capabilities decide, as they would in
        that chat."""
        access, roles = self.brain.access, self.brain.roles
        ruled = {r.bot: r.role for r in access.group_rules(chat) if r.role is not None}
        if not ruled:
            for bot in access.bots:
                rule = access.rule_for(bot, chat)
                if rule is not None and rule.role is not None:
                    ruled[bot] = rule.role
        bots = sorted(ruled)
        admitting = [b for b in bots if (r := roles.get(ruled[b])) and r.admits(context)]
        return next(iter(admitting or bots), None)

    # -- reading the ledger and the journal back -----------------------------------------

    def report(
        self, role: str, *, since: When = DEFAULT_SINCE, now: datetime | None = None
    ) -> AgentContext:
        """`agent_context`: what each context cost `role`'s turns since `since`."""
        if role not in self.brain.roles:
            raise no_role(self.brain, role)
        moment = now or datetime.now(UTC)
        start = self._since(since, moment)
        with self.store.transaction() as tx:
            entries = tx.ledger(role=role, since=start)
            turns = tx.journals(role=role, since=start)
        return agent_context(role, entries, turns, since=start, until=moment)

    def context(
        self, chat: str, *, bot: str | None = None, thread: str | None = None
    ) -> ChatContext | None:
        """`/context`: the chat's latest turn (of `bot`, else of any), the window, kept links.

        None when no turn of the chat is journaled.
        """
        with self.store.transaction() as tx:
            latest = tx.journals(chat=chat, bot=bot, thread=thread, limit=1)
            if not latest:
                return None
            conversation = latest[0].conversation
            kept = tx.kept(conversation)
            current = tx.current_turn(conversation)
        return chat_context(latest[0], kept, current)

    def journal(self, ident: int) -> TurnJournal:
        """One recorded turn's journal; `UsageError` for an id no turn has."""
        with self.store.transaction() as tx:
            found = tx.journal(ident)
        if found is None:
            raise UsageError(
                f"no turn {ident} in the journal — `keel turns BRAIN` lists the recorded turns"
            )
        return found

    def explain(self, turn: int | TurnRequest) -> Explanation:
        """Why each context of the brain did or did not reach a turn: a recorded one (by
        id), or a dry run of `turn` (nothing recorded)."""
        if isinstance(turn, TurnRequest):
            prepared, _ = self.prepare(turn, dry_run=True)
            journal = prepared.journal
            if journal is None:  # prepare_turn always journals; a guard for the type checker
                raise UsageError("the dry run journaled nothing")
        else:
            journal = self.journal(turn)
        return explain(self.brain, journal)

    def what_if(
        self,
        settings: Sequence[str],
        *,
        since: When = DEFAULT_SINCE,
        now: datetime | None = None,
        role: str | None = None,
        chat: str | None = None,
        limit: int | None = None,
    ) -> WhatIf:
        """The window's recorded turns re-fitted with `settings` (`KEY=VALUE`); nothing is
        recorded. See `keel.ledger.whatif` for what is exact and what is noted."""
        overrides = parse_overrides(settings)
        before = self.brain
        if role is not None and role not in before.roles:
            raise no_role(before, role)  # else a misspelt role reads as "0 turns"
        after = apply_overrides(before, overrides)
        start = self._since(since, now or datetime.now(UTC))
        store = self.store
        with store.transaction() as tx:
            journals = tx.journals(
                role=role, chat=chat, since=start, limit=limit, replay=True, newest_first=False
            )

        # Each read is its own short transaction: on SQLite a transaction holds the write
        # lock, and a what-if over many turns must not keep real turns waiting.
        def views_now(journal: TurnJournal, link: Link) -> tuple[ViewRows, ...]:
            context = after.contexts.get(link.context)
            if context is None:
                return ()
            rows = turn_knobs(after.roles[journal.role], after.manifest).rows
            tenant = tenant_of(after, journal.pins)
            with store.transaction() as tx:
                return read_link_views(after, link, tx.connection, rows, tenant)

        def fit_after(journal: TurnJournal, fitted: Fitted) -> Fit:
            with store.transaction() as tx:
                history = read_history(tx, journal.conversation, journal.turn)
            return replay_fit(after, journal, fitted, history, self.counter, self.tools.tools_for)

        return what_if(
            before,
            after,
            journals,
            overrides=[o.text for o in overrides],
            since=start,
            views_now=views_now,
            fit_after=fit_after,
        )

    def turns(
        self,
        *,
        chat: str | None = None,
        bot: str | None = None,
        thread: str | None = None,
        role: str | None = None,
        since: When | None = None,
        now: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> tuple[TurnJournal, ...]:
        """Recorded turns, newest first (their summaries, without the view rows)."""
        start = self._since(since, now or datetime.now(UTC)) if since is not None else None
        with self.store.transaction() as tx:
            return tx.journals(
                chat=chat, bot=bot, thread=thread, role=role, since=start, limit=limit
            )

    def history(
        self,
        chat: str,
        *,
        bot: str | None = None,
        thread: str | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> tuple[LoggedMessage, ...]:
        """The chat's newest messages (any bot and thread unless named), oldest first."""
        with self.store.transaction() as tx:
            return tx.chat_messages(chat, bot=bot, thread=thread, limit=limit)

    def bindings(self, chat: str | None = None) -> tuple[Binding, ...]:
        """Every binding of a chat (or of all chats): access.yaml's, then context_bind's."""
        static = [
            Binding(context=context, entity=entity, chat=rule.scope, bot=rule.bot, source="access")
            for rule in self.brain.access.rules
            if rule.is_group and (chat is None or rule.scope == chat)
            for context, entity in sorted(rule.contexts.items())
        ]
        with self.store.transaction() as tx:
            stored = tx.bindings(chat) if chat is not None else tx.all_bindings()
        return (*sorted(static, key=lambda b: (b.chat, b.bot or "", b.context)), *stored)

    @staticmethod
    def _since(since: When, now: datetime) -> datetime:
        return since.astimezone(UTC) if isinstance(since, datetime) else parse_since(since, now)

    # -- the brain itself --------------------------------------------------------------

    def doctor(self, *, now: datetime | None = None, probe: bool = False) -> Report:
        """Check the brain; the view checks need the database (they read each view as a
        turn would), and say so when it is out of reach. A database that holds turns adds
        the context-stubbed finding for the last seven days (`now` is the clock; it never
        migrates)."""
        # Read only: the store's transaction is rolled back (doctor never migrates).
        brain = self.brain
        code = self.code_for(brain)
        try:
            with Store(self.database).reading() as tx:
                return checkup(brain, tx, code, probe=probe, now=now, risks=self.tools.risks)
        except StoreError as exc:  # out of reach: the brain's own checks still run
            return checkup(
                brain,
                None,
                code,
                probe=probe,
                unreachable=str(exc),
                refused=exc if isinstance(exc, StateRefused) else None,
                risks=self.tools.risks,
            )

    @property
    def code(self) -> CodeRunner | None:
        """The runner of the brain's code (started on first use); None for a brain with no
        code — neither a `*.context.py` nor a chat policy — whose turns need none."""
        return self.code_for(self.brain)

    def code_for(self, brain: Brain) -> CodeRunner | None:
        """`code`, for this snapshot of the brain (the one the caller's turn reads)."""
        if not brain.with_code and not brain.engage:
            return None
        return self._runner(brain.root, brain.manifest.code)

    def runner(self) -> CodeRunner:
        """The runner of the brain's code, started on first use whatever code the brain
        has: a hook's gate or a scenario's pipeline needs one even when no turn does."""
        return self.runner_for(self.brain)

    def runner_for(self, brain: Brain) -> CodeRunner:
        """`runner`, for this snapshot of the brain (the one the caller's run reads)."""
        return self._runner(brain.root, brain.manifest.code)

    def _runner(self, root: Path, access: CodeAccess) -> CodeRunner:
        """The one runner, started on first use; its workers follow MANIFEST `code:` as it
        is now (an edit retires the workers started before it). It is given no database:
        a render's `ctx.query` runs in the turn's own transaction."""
        with self._lock:
            if self._code is None:
                runner = CodeRunner(root, access=access)
                runner.start()
                self._code = runner
            elif self._code.access is not access:
                # A new snapshot's `code:` (the same one's on every turn until an edit).
                self._code.reconfigure(access)
            return self._code

    def apply_state(self, *, rebuild_views: bool = False) -> StateReport:
        """Apply the brain's `state/*.sql` files its database has not applied yet, in name
        order, each recorded; a changed file is reported (`rebuild_views` re-creates the
        views of one that only defines views)."""
        return apply_state(self.database, self.brain.state_sql, rebuild_views=rebuild_views)

    def state_status(self) -> tuple[StateFile, ...]:
        """Each state file against the database: applied, changed, new or missing."""
        return state_status(self.database, self.brain.state_sql)

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the brain's files and close the database's connections."""
        self.source.close()
        with self._lock:
            if self._code is not None:
                self._code.close()
                self._code = None
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
