"""Sending a message from a run: the origin it carries, so that a reply brings it back.

A message a run sends records the run's feature and its reach, each entry with its key.
`about: {entity}` keys the reach's keyed reply context; `about: {context}` says the message
is about that context with no key. A run that would send unkeyed what can only come back
keyed is refused, naming each context and what its key is.

The room's pin holds for a send as it holds for a link: a message about one client cannot
go into a room bound to another (`check_pin`), whether a tool, a run's answer or a pipeline
sends it — checked before its card is posted and again when it is recorded.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.errors import Refused, UsageError
from keel.link.bindings import effective_bindings, pins_of
from keel.link.reach import find_run, run_reach
from keel.link.values import Conversation, Origin, RunRef, entity_problem, id_problem
from keel.store import Tx
from keel.store.delivery import Attachment


def _described(brain: Brain, entries: list[ReachEntry]) -> str:
    return ", ".join(
        f'"{e.context}" (keyed by {brain.contexts[e.context].entity})' for e in entries
    )


def _check(message_id: str, about_entity: str | None, about_context: str | None) -> None:
    if (problem := id_problem(message_id, "the message id")) is not None:
        raise UsageError(problem)
    if about_entity is not None and about_context is not None:
        raise Refused("name either about: {entity} or about: {context}, not both")
    if (problem := entity_problem(about_entity)) is not None:
        raise Refused(f"about: {{entity}}: {problem}")


def origin_of(
    brain: Brain,
    *,
    conversation: Conversation,
    message_id: str,
    sent_at: datetime,
    run: RunRef | None = None,
    entity: str | None = None,
    reach: tuple[ReachEntry, ...] | None = None,
    about_entity: str | None = None,
    about_context: str | None = None,
    pending_card: bool = False,
) -> Origin:
    """The origin a sent message records; raises `Refused` when the send must not go out."""
    _check(message_id, about_entity, about_context)
    base = Origin(
        bot=conversation.bot,
        chat=conversation.chat,
        thread=conversation.thread,
        message_id=message_id,
        sent_at=sent_at,
        pending_card=pending_card,
    )
    if run is None:
        if about_entity is not None or about_context is not None:
            raise Refused("about: applies to a message a run sends — add the run (--run KIND:ID)")
        return base
    spec = find_run(brain, run)
    entries = run_reach(brain, spec, override=reach, key=entity)
    replies = [
        e
        for e in entries
        if e.context in brain.contexts and "reply" in brain.contexts[e.context].when
    ]
    unkeyed = [e for e in replies if e.entity is None and brain.contexts[e.context].keyed]
    if about_context is not None:
        chosen = [e for e in entries if e.context == about_context]
        if not chosen:
            names = ", ".join(e.context for e in entries) or "nothing"
            raise Refused(
                f"about: {{context: '{about_context}'}} is not in the reach of {run.key} "
                f"(it reaches {names})"
            )
        entries = (ReachEntry(context=about_context),)
    elif about_entity is not None:
        if len(unkeyed) != 1:
            found = _described(brain, unkeyed) or "none"
            raise Refused(
                f"about: {{entity: '{about_entity}'}} needs exactly one keyed reply context "
                f"without a key in the reach of {run.key}; found {found}"
            )
        entries = tuple(replace(e, entity=about_entity) if e is unkeyed[0] else e for e in entries)
    elif replies and len(unkeyed) == len(replies):
        raise Refused(
            "the message would lose its origin: a reply to it could only come back keyed, "
            f"and the run carries no key for {_described(brain, unkeyed)} — send it with about: "
            "{entity: '<key>'}, or opt out with about: {context: '<id>'}"
        )
    return replace(base, feature=spec.feature, run=run.key, reach=tuple(entries))


def check_pin(tx: Tx, brain: Brain, origin: Origin) -> None:
    """`Refused` when the message is about another key than the one its room is pinned to
    (access.yaml's binding or a `context_bind`), or when the room's access rule is broken."""
    keyed = [e for e in origin.reach if e.entity is not None]
    if not keyed:
        return
    room = Conversation(bot=origin.bot, chat=origin.chat, thread=origin.thread)
    bindings = effective_bindings(brain, room, tx.bindings_here(room))
    pins = pins_of(brain, bindings)
    for entry in keyed:
        if entry.context in pins and pins[entry.context] != entry.entity:
            pinned = pins[entry.context]
            bound = f"'{pinned}'" if pinned is not None else "no entity"
            held = bindings[entry.context]
            where = f"thread {held.thread} of {room.chat}" if held.thread else room.chat
            raise Refused(
                f"this message is about {entry.context} '{entry.entity}', but {where} is "
                f"bound to {entry.context} {bound} — send it to the room of '{entry.entity}', "
                "or about what this room is bound to"
            )


def record_send(
    tx: Tx,
    brain: Brain,
    origin: Origin,
    text: str,
    *,
    replay: bool = False,
    attachment: Attachment | None = None,
) -> bool:
    """Record a sent message: its origin, and its text in the conversation's history.

    The message joins the history at the conversation's current turn (0 before its first),
    so the next turn there sees what it answers. A message id is sent once per chat: a
    second send under it is refused — except, with `replay`, the same message again (a
    run's send replayed after a crash), which records nothing and answers False. A new
    message is held to its room's pin (`check_pin`). An `attachment` is a file the message
    sends, `text` its caption.
    """
    conversation = Conversation(bot=origin.bot, chat=origin.chat, thread=origin.thread)
    (earlier,) = tx.origins(origin.bot, origin.chat, [origin.message_id]) or (None,)
    if earlier is not None:
        if replay and replace(earlier, sent_at=origin.sent_at) == origin:
            return False
        raise Refused(
            f"message {origin.message_id!r} was already sent in {origin.chat} at "
            f"{earlier.sent_at.isoformat(timespec='seconds')} — give each message its own id "
            "(leave the id out for a new one)"
        )
    check_pin(tx, brain, origin)
    tx.record_origin(origin)
    if text.strip():
        tx.record_message(
            conversation,
            turn=tx.current_turn(conversation),
            at=origin.sent_at,
            speaker="assistant",
            text=text,
            message_id=origin.message_id,
            attachment=attachment,
        )
    return True


def send_preview(
    conversation: Conversation,
    text: str,
    *,
    about_entity: str | None = None,
    about_context: str | None = None,
    risk: str = "",
) -> str:
    """A send as a person approving it reads it: where it goes, what it is about, its risk,
    then the text exactly as it will be sent."""
    where = conversation.chat + (f" thread {conversation.thread}" if conversation.thread else "")
    facts = [f"to {where}"]
    if about_entity is not None:
        facts.append(f"about entity {about_entity}")
    elif about_context is not None:
        facts.append(f"about context {about_context}")
    if risk:
        facts.append(f"risk {risk}")
    return f"Send {', '.join(facts)}:\n{text}"
