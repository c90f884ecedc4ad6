"""One Telegram message answered through the Engine, once.

The update's id is claimed in the transaction that prepares its turn (`UpdateSteps`): a
second claim — the update delivered again after a crash, or taken by a second process at
the same time — rolls that turn back and nothing is answered twice. The answer is
recorded with a Keel id of its own, the Telegram message it answers and the Business
connection it goes through, and joins the outbox (`keel.store.delivery`) in the same
transaction: delivering it is the outbox's work (`keel.telegram.outbox`).

A native reply is linked by the Keel id of the message it replies to, found by the
Telegram id the bot delivered it as; a reply to anything else links nothing. A message in
a forum topic a run opened (`topic_open`) is a turn of that topic's Keel thread, found by
Telegram's `message_thread_id`; in any other topic, that id is the thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from keel.assemble.values import Assembly, ModelStep
from keel.errors import KeelError
from keel.link.values import TurnRequest
from keel.log import logger, shown
from keel.runtime.engine import Engine
from keel.runtime.loop import DirectSteps, TurnOutcome, preparation, run_turn
from keel.runtime.models import ModelClient
from keel.store import Tx
from keel.store.store import Store
from keel.telegram.commands import command_of, context_text, help_text
from keel.telegram.updates import Incoming, turn_request
from keel.turn.prepare import Preparation, assembled, consult, prepare_in
from keel.turn.prepared import PreparedTurn

log = logger("telegram")


class AlreadyHandled(KeelError):
    """The update was handled before (by this process or another); its turn is undone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Handled:
    """What became of one incoming message."""

    turn: int | None = None
    answered: bool = False
    skipped: str | None = None
    # A yes or no to a pending card (or a button pressed on it): the decision recorded.
    decided: str | None = None
    # A chat command's answer (`/context`, `/help`), sent as it is, never by the model.
    command: str | None = None


class UpdateSteps(DirectSteps):
    """A turn's steps for one Telegram message: the update claimed with the turn, the
    answer recorded for delivery as a native reply."""

    __slots__ = ("_bot", "_incoming", "_request")

    def __init__(self, store: Store, *, incoming: Incoming, request: TurnRequest) -> None:
        super().__init__(store)
        self._incoming = incoming
        self._request = request
        self._bot = request.conversation.bot

    def prepare(self, preparation: Preparation) -> tuple[PreparedTurn, Assembly]:
        update_id = self._incoming.update_id
        consulted = consult(preparation, self._store)
        with self._store.transaction() as tx:
            # First, so a second process with the same update waits here, then backs off.
            if not tx.claim_update(self._bot, update_id, self._request.now):
                raise AlreadyHandled(f"update {update_id} of {self._bot} was answered already")
            done = prepare_in(tx, consulted)
            tx.note_update_turn(self._bot, update_id, done[0].id)
        return assembled(done)

    def request(
        self, prepared: PreparedTurn, number: int, run: Callable[[], ModelStep]
    ) -> ModelStep:
        # The bot's chat policy said this message is not for it, or had nothing to say of
        # a group message not said to the bot: nothing is asked or said.
        if prepared.engage is False or (prepared.engage is None and not self._incoming.addressed):
            return ModelStep()
        return super().request(prepared, number, run)

    def answer(
        self,
        prepared: PreparedTurn,
        text: str,
        run: Callable[[Store], None],  # noqa: ARG002 - recorded here, with the routing
    ) -> None:
        with self._store.transaction() as tx:
            tx.record_message(
                self._request.conversation,
                turn=prepared.turn,
                at=self._request.now,
                speaker="assistant",
                text=text,
                message_id=uuid.uuid4().hex,
                surface_reply_to=str(self._incoming.message_id),
                surface_connection=self._incoming.connection,
            )


def handle(
    engine: Engine, model: ModelClient | None, incoming: Incoming, *, bot: str, now: datetime
) -> Handled:
    """Answer one incoming message as a turn (only prepare it, without a model); what
    Keel refuses or cannot fit is logged and skipped, never raised."""
    store = engine.store
    with store.transaction() as tx:
        if tx.update_handled(bot, incoming.update_id):
            return Handled(skipped="answered already")
        incoming, found = _in_keel(tx, bot, incoming)
    request = turn_request(incoming, bot=bot, now=now, reply_to=() if found is None else (found,))
    if command_of(incoming.text) is not None:
        return _command(engine, incoming, request)
    if request.reply_to:
        # A yes or no to a pending card is the person's decision, not a turn (as in
        # `keel turn` and the service); the run waiting on it is woken by a worker.
        card = engine.answer_card(request)
        if card is not None:
            with store.transaction() as tx:
                tx.claim_update(bot, incoming.update_id, now)
            return Handled(decided=f"card {card.id} {card.status}")
    steps = UpdateSteps(store, incoming=incoming, request=request)
    try:
        brain = engine.brain  # one snapshot for the turn and its code
        code = engine.code_for(brain)
        if model is None:
            prepared, _ = steps.prepare(
                preparation(brain, request, engine.counter, engine.tools, code=code)
            )
            return Handled(turn=prepared.turn)
        outcome: TurnOutcome = run_turn(
            brain,
            store,
            request,
            model,
            engine.counter,
            engine.tools,
            code=code,
            steps=steps,
        )
    except AlreadyHandled:
        return Handled(skipped="answered already")
    except KeelError as exc:  # refused, does not fit, a brain file broken: said, not raised
        log.warning(
            "update %s in %s not answered: %s", incoming.update_id, shown(incoming.chat), exc
        )
        return Handled(skipped=str(exc))
    except Exception as exc:  # the provider failed (or a bug): this message only, not the bot
        log.exception("update %s in %s: the model failed", incoming.update_id, incoming.chat)
        return Handled(skipped=f"not answered: the model failed ({type(exc).__name__}: {exc})")
    return Handled(turn=outcome.prepared.turn, answered=bool(outcome.reply))


def _in_keel(tx: Tx, bot: str, incoming: Incoming) -> tuple[Incoming, str | None]:
    """The message in Keel's ids: its thread a run's topic's (when it is one), and the
    Keel id of the bot's message it replies to (None: none, or not the bot's)."""
    if incoming.thread is not None:
        opened = tx.thread_of_topic(bot, incoming.chat, incoming.thread)
        if opened is not None:
            incoming = replace(incoming, thread=opened)
    found = None
    if incoming.reply_to is not None:
        found = tx.by_surface_id(bot, incoming.chat, str(incoming.reply_to))
    return incoming, found


def _command(engine: Engine, incoming: Incoming, request: TurnRequest) -> Handled:
    """Answer `/context` or `/help` once (the update is claimed as a turn's would be)."""
    bot = request.conversation.bot
    with engine.store.transaction() as tx:
        if not tx.claim_update(bot, incoming.update_id, request.now):
            return Handled(skipped="answered already")
    if command_of(incoming.text) == "/context":
        found = engine.context(incoming.chat, bot=bot, thread=incoming.thread)
        return Handled(command=context_text(found))
    try:
        role: str | None = engine.role_for(request).id
    except KeelError:  # no role here: the help says so by naming none
        role = None
    return Handled(command=help_text(bot, role))
