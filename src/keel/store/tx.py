"""`Tx`: everything Keel reads and writes for one turn, inside one transaction.

A `Tx` is handed out by `Store.transaction()` and is bound to its connection: what it
writes is committed together when the block ends, or not at all. It is not thread-safe,
and it refuses to be used once its block has ended.

On SQLite, once a turn is counted (`next_turn`), the first of the conversation's reads
(`bindings_here`) reads its kept links and history (and the history's length) too, in the
same query (`keel.store.recall`), and `kept`, `history` and `history_count` hand those out
while the transaction has not written them; `expire` sends nothing when no kept link can
have run out. Nothing else writes while the transaction holds SQLite's write lock, so this
reads what separate queries would. PostgreSQL reads each when asked, as other
transactions may commit between.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy import Connection

from keel.assemble.values import Message, Speaker
from keel.brain.specs import EntityKind
from keel.errors import StoreError
from keel.link.values import Binding, Conversation, KeptLink, Origin, Stored
from keel.payload.sessions import SessionState
from keel.store import bindings as _bindings
from keel.store import cards as _cards
from keel.store import delivery as _delivery
from keel.store import history as _history
from keel.store import journal as _journal
from keel.store import keep as _keep
from keel.store import ledger as _ledger
from keel.store import listing as _listing
from keel.store import origins as _origins
from keel.store import recall as _recall
from keel.store import runs as _runs
from keel.store import sessions as _sessions
from keel.store import topics as _topics
from keel.store import turns as _turns
from keel.store import widgets as _widgets
from keel.store.delivery import Attachment, Outgoing
from keel.store.journal_values import TurnJournal
from keel.store.ledger import LedgerEntry
from keel.store.listing import LoggedMessage
from keel.store.run_values import (
    CardRefusal,
    CardRow,
    CardStatus,
    ExecutorRow,
    RunRow,
    RunStatus,
    SentMessage,
    StepRow,
    UsageRow,
)
from keel.store.sql import failing_as
from keel.store.topics import Topic
from keel.store.turn_io import HISTORY_READ, TurnRecords, TurnState
from keel.store.widgets import LiveWidget


class Tx:
    """One transaction on Keel's tables: turns, history, origins, links, ledger, journal,
    sessions, runs."""

    __slots__ = ("_conn", "_counted", "_open", "_recalled")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._open = True
        # SQLite only (see the module): the turns counted here, and what was read ahead.
        self._counted: dict[Conversation, int] | None = (
            {} if conn.dialect.name == "sqlite" else None
        )
        self._recalled: dict[Conversation, _recall.Recalled] = {}

    @property
    def connection(self) -> Connection:
        """The transaction's connection, to read state views in the same transaction."""
        if not self._open:
            raise StoreError("this transaction has ended — read inside its `with` block")
        return self._conn

    def close(self) -> None:
        """End this handle's use; the store commits or rolls back the transaction."""
        self._open = False
        self._recalled.clear()  # what it read ahead is not to be handed out after

    @contextmanager
    def _doing(self, what: str) -> Iterator[Connection]:
        if not self._open:
            raise StoreError(
                f"cannot {what}: this transaction has ended — do the work inside "
                "`with store.transaction() as tx:`"
            )
        with failing_as(what):
            yield self._conn

    # One turn: what it reads at its top, what it writes at its end

    def read_turn(
        self,
        conversation: Conversation,
        *,
        reply_to: tuple[str, ...] = (),
        session: str | None = None,
    ) -> TurnState:
        """Count a new turn of the conversation and read what bears on it (`TurnState`);
        `session` names a CLI session whose last-sent state the turn needs."""
        chat = conversation.chat
        origins = self.origins(conversation.bot, chat, reply_to) if reply_to else ()
        turn = self.next_turn(conversation)
        bindings = self.bindings_here(conversation)
        kept = self.kept(conversation)
        history = self.history(conversation, before_turn=turn, limit=HISTORY_READ)
        older = 0
        if len(history) >= HISTORY_READ:
            older = self.history_count(conversation, before_turn=turn) - len(history)
        return TurnState(
            stored=Stored(turn=turn, origins=origins, bindings=bindings, kept=kept),
            history=history,
            older=older,
            sent=self.session_state(session) if session is not None else None,
            views=self.connection,
        )

    def record_turn(self, records: TurnRecords) -> int:
        """Write what a turn decided (`TurnRecords`); return its journal's stable id."""
        conversation, turn = records.conversation, records.turn
        if records.said is not None:
            self.record_message(
                conversation, turn=turn, at=records.at, speaker="user", text=records.said
            )
        if records.session is not None:
            self.save_session(*records.session)
        self.keep(conversation, records.keep)
        self.expire(conversation, turn)
        self.record_ledger(records.ledger)
        return self.record_journal(records.journal)

    # Turns

    def next_turn(self, conversation: Conversation) -> int:
        """Count a new turn of the conversation and return its number (1 for the first)."""
        with self._doing(f"count a turn in {conversation.chat}") as conn:
            number = _turns.next_turn(conn, conversation)
        if self._counted is not None:
            self._counted[conversation] = number
            self._recalled.pop(conversation, None)
        return number

    def current_turn(self, conversation: Conversation) -> int:
        """The conversation's latest turn number; 0 before its first."""
        with self._doing(f"read the turn number in {conversation.chat}") as conn:
            return _turns.current_turn(conn, conversation)

    # History

    def record_message(
        self,
        conversation: Conversation,
        *,
        turn: int,
        at: datetime,
        speaker: Speaker,
        text: str,
        message_id: str | None = None,
        surface_reply_to: str | None = None,
        surface_connection: str | None = None,
        attachment: Attachment | None = None,
    ) -> None:
        """Log a message of the conversation: a turn's input ('user') or a bot's message
        (which joins the outbox: `keel.store.delivery`), with the file it sends, if any."""
        recalled = self._recalled.get(conversation)
        if recalled is not None:
            recalled.history = None
        with self._doing(f"record a message of turn {turn} in {conversation.chat}") as conn:
            _history.record_message(
                conn,
                conversation,
                turn=turn,
                at=at,
                speaker=speaker,
                text=text,
                message_id=message_id,
                surface_reply_to=surface_reply_to,
                surface_connection=surface_connection,
                attachment=attachment,
            )

    def history(
        self, conversation: Conversation, *, before_turn: int, limit: int = 200
    ) -> tuple[Message, ...]:
        """The newest `limit` messages of the turns before `before_turn`, oldest first."""
        recalled = self._recalled.get(conversation)
        if recalled is not None:
            newest = recalled.newest(before_turn, limit)
            if newest is not None:
                return newest
        with self._doing(f"read the history of {conversation.chat}") as conn:
            return _history.history(conn, conversation, before_turn=before_turn, limit=limit)

    def replied(self, conversation: Conversation, ids: Iterable[str]) -> dict[str, str]:
        """Message id → text, for the messages among `ids` this bot sent in this chat."""
        with self._doing(f"read the messages replied to in {conversation.chat}") as conn:
            return _history.replied(conn, conversation.bot, conversation.chat, ids)

    def history_count(self, conversation: Conversation, *, before_turn: int) -> int:
        """How many messages the turns before `before_turn` hold, however many are read."""
        recalled = self._recalled.get(conversation)
        if recalled is not None:
            total = recalled.count(before_turn)
            if total is not None:
                return total
        with self._doing(f"count the history of {conversation.chat}") as conn:
            return _history.history_count(conn, conversation, before_turn=before_turn)

    # Origins

    def record_origin(self, origin: Origin) -> None:
        """Record what a sent message carries, replacing an earlier record of it."""
        what = f"record the origin of message {origin.message_id!r} in {origin.chat}"
        with self._doing(what) as conn:
            _origins.record_origin(conn, origin)

    def origins(self, bot: str, chat: str, message_ids: Iterable[str]) -> tuple[Origin, ...]:
        """The recorded origins of these messages, in the order asked; unknown ones left out."""
        with self._doing(f"read message origins in {chat}") as conn:
            return _origins.origins(conn, bot, chat, message_ids)

    def resolve_card(self, bot: str, chat: str, message_id: str) -> bool:
        """Mark a HITL card answered; False when the message is not recorded."""
        with self._doing(f"resolve the card {message_id!r} in {chat}") as conn:
            return _origins.resolve_card(conn, bot, chat, message_id)

    def prune_origins(self, older_than: datetime) -> int:
        """Delete origins sent before `older_than`, except pending cards; return how many."""
        with self._doing("prune old message origins") as conn:
            return _origins.prune_origins(conn, older_than)

    # Bindings

    def bind(self, binding: Binding) -> None:
        """Store a `context_bind` binding; the same context in the same place is replaced."""
        with self._doing(f"bind {binding.context!r} in {binding.chat}") as conn:
            _bindings.bind(conn, binding)

    def unbind(
        self, context: str, chat: str, thread: str | None = None, bot: str | None = None
    ) -> bool:
        """Remove a stored binding; False when nothing was bound in that place."""
        with self._doing(f"unbind {context!r} in {chat}") as conn:
            return _bindings.unbind(conn, context, chat, thread, bot)

    def bindings(self, chat: str) -> tuple[Binding, ...]:
        """Every stored binding of the chat, any thread and any bot."""
        with self._doing(f"read the bindings of {chat}") as conn:
            return _bindings.bindings(conn, chat)

    def bindings_here(self, conversation: Conversation) -> tuple[Binding, ...]:
        """The bindings that cover this conversation's thread (or whole chat), any bot."""
        turn = None if self._counted is None else self._counted.get(conversation)
        with self._doing(f"read the bindings of {conversation.chat}") as conn:
            if turn is not None:
                recalled = _recall.recall(
                    conn, conversation, before_turn=turn, limit=_recall.HISTORY_AHEAD
                )
                self._recalled[conversation] = recalled
                return recalled.bindings
            return _bindings.bindings(
                conn, conversation.chat, thread=conversation.thread, every_thread=False
            )

    # Keep

    def kept(self, conversation: Conversation) -> tuple[KeptLink, ...]:
        """The links kept for this conversation."""
        recalled = self._recalled.get(conversation)
        if recalled is not None and recalled.kept is not None:
            return recalled.kept
        with self._doing(f"read the kept links in {conversation.chat}") as conn:
            return _keep.kept(conn, conversation)

    def keep(self, conversation: Conversation, links: Sequence[KeptLink]) -> None:
        """Keep links; a (context, entity) already kept takes the new turn, kind and feature."""
        recalled = self._recalled.get(conversation)
        if recalled is not None:
            recalled.kept_more(link.until_turn for link in links)
        with self._doing(f"keep links in {conversation.chat}") as conn:
            _keep.keep(conn, conversation, links)

    def expire(self, conversation: Conversation, before_turn: int) -> int:
        """Drop kept links whose last turn is before `before_turn`; return how many."""
        recalled = self._recalled.get(conversation)
        if recalled is not None:
            if not recalled.expiring(before_turn):
                return 0
            recalled.expired(before_turn)
        with self._doing(f"expire kept links in {conversation.chat}") as conn:
            return _keep.expire(conn, conversation, before_turn)

    # Ledger

    def record_ledger(self, entries: Iterable[LedgerEntry]) -> None:
        """Append what a turn carried to the spend ledger."""
        with self._doing("record the spend ledger") as conn:
            _ledger.record_ledger(conn, entries)

    def ledger(
        self,
        *,
        role: str | None = None,
        bot: str | None = None,
        chat: str | None = None,
        since: datetime | None = None,
    ) -> tuple[LedgerEntry, ...]:
        """Ledger entries matching every filter given (`since` inclusive), oldest first."""
        with self._doing("read the spend ledger") as conn:
            return _ledger.ledger(conn, role=role, bot=bot, chat=chat, since=since)

    # The turn journal

    def record_journal(self, journal: TurnJournal) -> int:
        """Write a prepared turn's journal row; return the turn's stable id."""
        what = f"record the journal of turn {journal.turn} in {journal.conversation.chat}"
        with self._doing(what) as conn:
            return _journal.record_journal(conn, journal)

    def journal(self, ident: int) -> TurnJournal | None:
        """One turn's journal, with what replays it; None when no turn has this id."""
        with self._doing(f"read the journal of turn {ident}") as conn:
            return _journal.journal(conn, ident)

    def journals(
        self,
        *,
        bot: str | None = None,
        chat: str | None = None,
        thread: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        replay: bool = False,
        newest_first: bool = True,
    ) -> tuple[TurnJournal, ...]:
        """Journaled turns matching every filter given; `limit` keeps the newest."""
        with self._doing("read the turn journal") as conn:
            return _journal.journals(
                conn,
                bot=bot,
                chat=chat,
                thread=thread,
                role=role,
                since=since,
                limit=limit,
                replay=replay,
                newest_first=newest_first,
            )

    # Listing, for people

    def chat_messages(
        self, chat: str, *, bot: str | None = None, thread: str | None = None, limit: int = 50
    ) -> tuple[LoggedMessage, ...]:
        """The chat's newest `limit` messages (any bot and thread unless named), oldest first."""
        with self._doing(f"read the messages of {chat}") as conn:
            return _listing.chat_messages(conn, chat, bot=bot, thread=thread, limit=limit)

    def all_bindings(self) -> tuple[Binding, ...]:
        """Every binding `context_bind` stored, in every chat."""
        with self._doing("read the stored bindings") as conn:
            return _listing.all_bindings(conn)

    # CLI-agent sessions

    def session_state(self, session_id: str) -> SessionState:
        """What the CLI-agent session was last sent; empty for a session never saved."""
        with self._doing(f"read the state of session {session_id!r}") as conn:
            return _sessions.session_state(conn, session_id)

    def save_session(self, session_id: str, state: SessionState) -> None:
        """Replace the session's whole stored state with `state`."""
        with self._doing(f"save the state of session {session_id!r}") as conn:
            _sessions.save_session(conn, session_id, state)

    # Runs, their steps and executors

    def record_run(self, run: RunRow) -> None:
        """Write a run's row, replacing the one with its id."""
        with self._doing(f"record run {run.id!r}") as conn:
            _runs.record_run(conn, run)

    def add_run(self, run: RunRow) -> bool:
        """Write a run's row unless one has its id already; whether it wrote it."""
        with self._doing(f"record run {run.id!r}") as conn:
            return _runs.add_run(conn, run)

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        at: datetime,
        *,
        error: str | None = None,
        executor: str | None = None,
    ) -> bool:
        """Move a run to `status`; False for a run that is not recorded."""
        with self._doing(f"set the status of run {run_id!r}") as conn:
            return _runs.set_run_status(conn, run_id, status, at, error=error, executor=executor)

    def run(self, run_id: str) -> RunRow | None:
        """One run, or None."""
        with self._doing(f"read run {run_id!r}") as conn:
            return _runs.run(conn, run_id)

    def runs(
        self,
        *,
        status: RunStatus | None = None,
        kind: EntityKind | None = None,
        limit: int = 50,
    ) -> tuple[RunRow, ...]:
        """The newest runs, newest first (with this status, of this kind)."""
        with self._doing("list the runs") as conn:
            return _runs.runs(conn, status=status, kind=kind, limit=limit)

    def record_step(self, step: StepRow) -> bool:
        """Write a step's row; False when that step is recorded done already."""
        with self._doing(f"record step {step.seq} of run {step.run_id!r}") as conn:
            return _runs.record_step(conn, step)

    def step(self, run_id: str, seq: int) -> StepRow | None:
        """One step of a run, or None."""
        with self._doing(f"read step {seq} of run {run_id!r}") as conn:
            return _runs.step(conn, run_id, seq)

    def steps(self, run_id: str) -> tuple[StepRow, ...]:
        """A run's steps in order."""
        with self._doing(f"read the steps of run {run_id!r}") as conn:
            return _runs.steps(conn, run_id)

    def register_executor(self, executor: ExecutorRow) -> None:
        """Record a live executor."""
        with self._doing(f"register executor {executor.id!r}") as conn:
            _runs.register_executor(conn, executor)

    def touch_executor(self, executor_id: str, at: datetime) -> bool:
        """Note the executor is alive; False when it is not recorded."""
        with self._doing(f"refresh executor {executor_id!r}") as conn:
            return _runs.touch_executor(conn, executor_id, at)

    def remove_executors(self, executor_ids: Sequence[str]) -> int:
        """Forget executors; return how many were recorded."""
        with self._doing("remove executors") as conn:
            return _runs.remove_executors(conn, executor_ids)

    def executors(self) -> Mapping[str, ExecutorRow]:
        """Every recorded executor, by id."""
        with self._doing("read the executors") as conn:
            return _runs.executors(conn)

    # Approval cards and usage

    def record_card(self, card: CardRow) -> None:
        """Write a new approval card."""
        with self._doing(f"record card {card.id!r}") as conn:
            _cards.record_card(conn, card)

    def decide_card(
        self,
        card_id: str,
        status: CardStatus,
        at: datetime,
        *,
        by: str | None = None,
        note: str | None = None,
    ) -> bool:
        """Decide a pending card; False when it is unknown or decided already."""
        with self._doing(f"decide card {card_id!r}") as conn:
            return _cards.decide_card(conn, card_id, status, at, by=by, note=note)

    def refuse_decision(self, card_id: str, refusal: CardRefusal) -> bool:
        """Record a decision refused for who made it; False when the card is not pending."""
        with self._doing(f"record a refused decision on card {card_id!r}") as conn:
            return _cards.refuse_decision(conn, card_id, refusal)

    def card(self, card_id: str) -> CardRow | None:
        """One card, or None."""
        with self._doing(f"read card {card_id!r}") as conn:
            return _cards.card(conn, card_id)

    def card_for_message(self, bot: str, chat: str, message_id: str) -> CardRow | None:
        """The card a message asked, or None."""
        with self._doing(f"find the card of message {message_id!r} in {chat}") as conn:
            return _cards.card_for_message(conn, bot, chat, message_id)

    def cards(
        self, *, run_id: str | None = None, status: CardStatus | None = None
    ) -> tuple[CardRow, ...]:
        """Cards of a run (or all), with this status if named, oldest first."""
        with self._doing("read the approval cards") as conn:
            return _cards.cards(conn, run_id=run_id, status=status)

    def record_usage(self, row: UsageRow) -> bool:
        """Store one request's usage; False when it was recorded already."""
        with self._doing(f"record the usage of request {row.step!r}") as conn:
            return _cards.record_usage(conn, row)

    def usage(self, *, run_id: str | None = None) -> tuple[UsageRow, ...]:
        """Recorded usage, oldest first (of one run, when named)."""
        with self._doing("read the recorded usage") as conn:
            return _cards.usage(conn, run_id=run_id)

    def has_message(self, conversation: Conversation, message_id: str) -> bool:
        """Whether the conversation's history holds a message with this id."""
        with self._doing(f"look for message {message_id!r} in {conversation.chat}") as conn:
            return _cards.has_message(conn, conversation, message_id)

    def sent_messages(
        self, chat: str | None = None, *, run_id: str | None = None, limit: int = 50
    ) -> tuple[SentMessage, ...]:
        """The newest messages the bot sent (in `chat`, by run `run_id`), oldest first, with
        their origins."""
        with self._doing(f"read the messages sent in {chat or run_id}") as conn:
            return _cards.sent_messages(conn, chat, run_id=run_id, limit=limit)

    def journal_id(self, conversation: Conversation, turn: int) -> int | None:
        """The stable id of a conversation's turn, or None."""
        with self._doing(f"find turn {turn} of {conversation.chat}") as conn:
            return _cards.journal_id(conn, conversation, turn)

    # Widgets

    def live_widgets(self) -> tuple[LiveWidget, ...]:
        """Every live widget's message (one per context and room), oldest first."""
        with self._doing("read the live widgets") as conn:
            return _widgets.live_widgets(conn)

    def retire_widgets(
        self, *, bot: str, chat: str, thread: str | None, context: str, keep: str, at: datetime
    ) -> tuple[str, ...]:
        """Make the room's earlier widgets of `context` (all but message `keep`) ordinary,
        marked replaced at `at`; their message ids."""
        with self._doing(f"retire the earlier {context} widgets in {chat}") as conn:
            return _widgets.retire_widgets(
                conn, bot=bot, chat=chat, thread=thread, context=context, keep=keep, at=at
            )

    def edit_message(self, row: int, text: str, at: datetime) -> bool:
        """Change a recorded message's text (a delivered one goes out again as an edit)."""
        with self._doing(f"edit message row {row}") as conn:
            return _widgets.edit_message(conn, row, text, at)

    # Delivery on a chat surface

    def outbox(
        self, bot: str, chat_prefix: str, now: datetime, limit: int = 100
    ) -> tuple[Outgoing, ...]:
        """The bot's pending messages in chats starting with `chat_prefix`, oldest first
        (none another process is sending)."""
        with self._doing(f"read the outbox of {bot}") as conn:
            return _delivery.outbox(conn, bot, chat_prefix, now, limit)

    def take(self, row: int, now: datetime, until: datetime) -> bool:
        """Take a pending message to send until `until`; False when another process has it."""
        with self._doing(f"take message row {row} to send") as conn:
            return _delivery.take(conn, row, now, until)

    def mark_delivered(self, row: int, surface_message_id: str) -> bool:
        """Mark a pending message delivered; False if another process did first."""
        with self._doing(f"mark message row {row} delivered") as conn:
            return _delivery.mark_delivered(conn, row, surface_message_id)

    def attempt_failed(
        self, row: int, reason: str, *, final: bool, until: datetime | None = None
    ) -> None:
        """Count a failed delivery attempt, held `until` the next (`final`: failed for good)."""
        with self._doing(f"record a failed delivery of message row {row}") as conn:
            _delivery.attempt_failed(conn, row, reason, final=final, until=until)

    def by_surface_id(self, bot: str, chat: str, surface_message_id: str) -> str | None:
        """Keel's id of the message delivered in `chat` as the surface's `surface_message_id`."""
        with self._doing(f"find surface message {surface_message_id!r} in {chat}") as conn:
            return _delivery.by_surface_id(conn, bot, chat, surface_message_id)

    def claim_update(self, bot: str, update_id: int, at: datetime) -> bool:
        """Record a surface update as handled; False when it was handled already."""
        with self._doing(f"record update {update_id} of {bot}") as conn:
            return _delivery.claim_update(conn, bot, update_id, at)

    def note_update_turn(self, bot: str, update_id: int, turn_id: int | None) -> None:
        """Name the turn (journal id) an update became."""
        with self._doing(f"record the turn of update {update_id}") as conn:
            _delivery.note_update_turn(conn, bot, update_id, turn_id)

    def update_handled(self, bot: str, update_id: int) -> bool:
        """Whether the surface update was handled already."""
        with self._doing(f"look up update {update_id} of {bot}") as conn:
            return _delivery.update_handled(conn, bot, update_id)

    # Forum topics opened by runs

    def record_topic(self, topic: Topic) -> Topic:
        """Record a topic to open (the one recorded before under its thread, if any)."""
        with self._doing(f"record the topic {topic.thread!r} of {topic.chat}") as conn:
            return _topics.record_topic(conn, topic)

    def topic(self, bot: str, chat: str, thread: str) -> Topic | None:
        """The topic recorded under Keel's `thread` in `chat`, or None."""
        with self._doing(f"read the topic {thread!r} of {chat}") as conn:
            return _topics.topic_of(conn, bot, chat, thread)

    def thread_of_topic(self, bot: str, chat: str, surface_thread_id: str) -> str | None:
        """Keel's thread id of the topic the surface calls `surface_thread_id`, or None."""
        with self._doing(f"find the topic {surface_thread_id!r} of {chat}") as conn:
            return _topics.thread_of(conn, bot, chat, surface_thread_id)

    def pending_topics(
        self, bot: str, chat_prefix: str, now: datetime, limit: int = 100
    ) -> tuple[Topic, ...]:
        """The bot's topics still to open in chats starting with `chat_prefix`."""
        with self._doing(f"read the topics {bot} has to open") as conn:
            return _topics.pending_topics(conn, bot, chat_prefix, now, limit)

    def take_topic(self, topic: Topic, now: datetime, until: datetime) -> bool:
        """Take a pending topic to open until `until`; False when another process has it."""
        with self._doing(f"take the topic {topic.thread!r} to open") as conn:
            return _topics.take_topic(conn, topic, now, until)

    def topic_opened(self, topic: Topic, surface_thread_id: str) -> bool:
        """Record the surface's thread id of an opened topic."""
        with self._doing(f"record the topic {topic.thread!r} opened") as conn:
            return _topics.topic_opened(conn, topic, surface_thread_id)

    def topic_attempt_failed(
        self, topic: Topic, reason: str, *, final: bool, until: datetime | None = None
    ) -> None:
        """Count a failed attempt to open a topic (`final`: failed for good)."""
        with self._doing(f"record a failed opening of the topic {topic.thread!r}") as conn:
            _topics.topic_attempt_failed(conn, topic, reason, final=final, until=until)
