"""The HTTP bodies of `keel serve`: what each route accepts, checked before Keel sees it.

Every body is a pydantic model with `extra="forbid"`, so a misspelt field is a 422 that
names it. Strings are bounded and may not hold NUL or unpaired surrogates (no database
stores them); a time carries its zone and lies between 1970 and 9000 in UTC; a window
(`since`) is a span or an ISO time, parsed here so its error names the field. A free-form
value (an event's payload, a scenario's vars) nests at most `MAX_JSON_DEPTH` levels, and
its strings follow the same rule. The bounds are `keel.web.limits`. The turn body is the
flags of `keel turn` in snake case, and a brain's seed file (`keel.web.seed`) writes each
step as the body of its route.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    field_validator,
)

from keel.brain.specs import ENTITY_KINDS, ReachEntry
from keel.errors import UsageError
from keel.ledger import parse_overrides, parse_since
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.web.limits import EARLIEST, LATEST, MAX_JSON_DEPTH, MAX_LIST, MAX_NAME, MAX_TEXT
from keel.web.runs import RunStart, Where


def clean(value: str) -> str:
    """A string a database can store: no NUL, no unpaired surrogate."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (an unpaired surrogate was sent)") from None
    return value


def _in_range(value: datetime) -> datetime:
    try:
        moment = value.astimezone(UTC)
    except OverflowError:  # in UTC it falls before year 1 or after 9999
        moment = None
    if moment is None or not EARLIEST <= moment < LATEST:
        raise ValueError(
            f"must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d} in UTC "
            "(a time with a zone, e.g. 2026-11-29T18:00:00Z)"
        )
    return moment


def _run(value: str) -> str:
    kind, _, ident = value.partition(":")
    if kind not in ENTITY_KINDS or not ident:
        raise ValueError(f"write KIND:ID with KIND one of {', '.join(ENTITY_KINDS)}")
    return value


def _since(value: str) -> str:
    try:
        parse_since(value, datetime.now(UTC))
    except UsageError as exc:
        raise ValueError(str(exc).removeprefix(f"since {value!r}: ")) from None
    return value


def _plain_json(value: dict[str, Any]) -> dict[str, Any]:
    """A free-form value every layer below can hold: at most `MAX_JSON_DEPTH` levels deep
    (the value itself the first), and no string a database cannot store. Walked with a
    stack, not recursion: how deep it goes is what is being checked."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            clean(item)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise ValueError(
                f"nests deeper than {MAX_JSON_DEPTH} levels — flatten it, or send what lies "
                "deeper as a string"
            )
        children = [*item, *item.values()] if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return value


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME), AfterValidator(clean)]
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(clean)]
Moment = Annotated[AwareDatetime, AfterValidator(_in_range)]
RunText = Annotated[
    str,
    Field(min_length=3, max_length=MAX_NAME, examples=["heartbeat:evening-film"]),
    AfterValidator(clean),
    AfterValidator(_run),
]
Since = Annotated[str, Field(min_length=1, max_length=64, examples=["7d"]), AfterValidator(_since)]
Format = Literal["openai", "responses", "anthropic"]


class Body(BaseModel):
    """A request body: unknown fields are refused with their name."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Entry(Body):
    """A context, and the entity key it is about (none for an unkeyed context)."""

    context: Name
    entity: Name | None = None

    def value(self) -> ReachEntry:
        return ReachEntry(context=self.context, entity=self.entity)


def run_ref(text: str | None) -> RunRef | None:
    """`KIND:ID`, already checked by `RunText`, as a run reference."""
    if text is None:
        return None
    word, _, ident = text.partition(":")
    kind = next(k for k in ENTITY_KINDS if k == word)
    return RunRef(kind=kind, id=ident)


def entries(items: list[Entry] | None) -> tuple[ReachEntry, ...] | None:
    return None if items is None else tuple(e.value() for e in items)


class TurnFields(Body):
    """What describes a turn: `keel turn`'s flags, in snake case."""

    bot: Name = "cli"
    chat: Name = "cli"
    thread: Name | None = None
    role: Name | None = None
    dm: bool = False
    input: Text = ""
    reply_to: list[Name] = Field(default_factory=list, max_length=MAX_LIST)
    run: RunText | None = None
    entity: Name | None = None
    reach: list[Entry] | None = Field(default=None, max_length=MAX_LIST)
    attach: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    open: list[Entry] = Field(default_factory=list, max_length=MAX_LIST)
    at: Moment | None = Field(default=None, description="The turn's time (default: now).")
    sender: Name | None = Field(
        default=None, description="Who spoke: a person's id, such as `tg:user:42`."
    )

    def request(self, now: datetime | None = None) -> TurnRequest:
        """The turn this body describes, at `at`, else `now`, else the clock's now."""
        return TurnRequest(
            conversation=Conversation(bot=self.bot, chat=self.chat, thread=self.thread),
            now=self.at or now or datetime.now(UTC),
            role=self.role,
            dm=self.dm,
            input=self.input,
            reply_to=tuple(self.reply_to),
            run=run_ref(self.run),
            entity=self.entity,
            reach=entries(self.reach),
            attach=entries(self.attach) or (),
            open=entries(self.open) or (),
            sender=self.sender,
        )


class TurnBody(TurnFields):
    """`POST /v1/turns`: prepare a turn (or answer it with the server's model)."""

    dry_run: bool = False
    format: Format | None = None
    session: Name | None = Field(default=None, description="A CLI agent's session id.")
    compacted: bool = False


class OpenBody(Body):
    """`POST /v1/open`: `context_open` of `context` (and `entity`) in the turn `turn`."""

    context: Name
    entity: Name | None = None
    turn: TurnFields = Field(default_factory=TurnFields)


class SendBody(Body):
    """`POST /v1/send`: a message a bot sent, with the origin a reply will bring back."""

    bot: Name
    chat: Name
    text: Text
    thread: Name | None = None
    run: RunText | None = None
    entity: Name | None = None
    reach: list[Entry] | None = Field(default=None, max_length=MAX_LIST)
    about_entity: Name | None = None
    about_context: Name | None = None
    message_id: Name | None = None
    card: bool = False
    at: Moment | None = None


class WidgetBody(Body):
    """`POST /v1/widgets`: show `context`'s widget in a chat (its lines, numbered)."""

    context: Name
    bot: Name
    chat: Name
    thread: Name | None = None
    message_id: Name | None = None
    at: Moment | None = None


class RefreshBody(Body):
    """`POST /v1/widgets/refresh`: re-read every live widget's lines (as of `at`)."""

    at: Moment | None = None


class BindBody(Body):
    """`POST /v1/bind`: `context_bind`, as the role answering in the chat (or `role`)."""

    context: Name
    chat: Name
    entity: Name | None = None
    thread: Name | None = None
    bot: Name | None = None
    role: Name | None = None


class UnbindBody(Body):
    """`POST /v1/unbind`: `context_unbind`, removing a binding `bind` made."""

    context: Name
    chat: Name
    thread: Name | None = None
    bot: Name | None = None
    role: Name | None = None


KnobValue = (
    Annotated[StrictInt, Field(ge=-(10**12), le=10**12)]
    | Annotated[str, Field(max_length=64), AfterValidator(clean)]
)


class WhatIfBody(Body):
    """`POST /v1/what-if`: the window's turns re-fitted under changed knobs."""

    set: dict[Annotated[str, Field(max_length=256), AfterValidator(clean)], KnobValue] = Field(
        default_factory=dict,
        max_length=MAX_LIST,
        examples=[{"contexts.maxActive": 5}],
    )
    since: Since = "7d"
    now: Moment | None = None
    role: Name | None = None
    chat: Name | None = None

    @field_validator("set")
    @classmethod
    def _knobs(cls, value: dict[str, int | str]) -> dict[str, int | str]:
        try:
            parse_overrides([f"{key}={knob}" for key, knob in value.items()])
        except UsageError as exc:
            raise ValueError(str(exc).removeprefix("--set ")) from None
        return value

    def settings(self) -> tuple[str, ...]:
        return tuple(f"{key}={value}" for key, value in self.set.items())


# A JSON object a caller hands to brain code: an event's payload, a scenario's vars.
JSONObject = Annotated[
    dict[Annotated[str, Field(max_length=MAX_NAME), AfterValidator(clean)], Any],
    AfterValidator(_plain_json),
]
ModelSpec = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME,
        description="Who answers this run: openai:NAME, anthropic:NAME, "
        "openai-compatible:NAME@URL, scripted:FILE or none (default: the server's --model, "
        "else the role's or MANIFEST's).",
        examples=["none"],
    ),
    AfterValidator(clean),
]


class RunBody(Body):
    """`POST /v1/runs`: start a heartbeat or a scenario now."""

    run: RunText
    entity: Name | None = None
    reach: list[Entry] | None = Field(default=None, max_length=MAX_LIST)
    bot: Name | None = None
    chat: Name | None = None
    thread: Name | None = None
    input: Text = ""
    vars: JSONObject = Field(
        default_factory=dict, max_length=MAX_LIST, description="A scenario's vars."
    )
    model: ModelSpec | None = None

    def start(self, *, model: str | None) -> RunStart:
        """The run to start, run by `model` (the body's, once checked); `UsageError` for a
        hook, which runs when its event fires."""
        ref = run_ref(self.run)
        if ref is None or ref.kind == "hook":
            raise UsageError(
                f"run {self.run!r}: a hook runs when its event fires — fire the event "
                "(POST /v1/events/<event>, or a seed's fire: step)"
            )
        return RunStart(
            run=ref,
            entity=self.entity,
            reach=entries(self.reach),
            where=Where(bot=self.bot, chat=self.chat, thread=self.thread),
            input=self.input,
            vars=self.vars,
            model=model,
        )


class DecisionBody(Body):
    """`POST /v1/approvals/{card}`: a person's decision on a pending approval card."""

    decision: Literal["approve", "deny"]
    by: Name | None = None
    note: Text | None = None
    person: Name | None = Field(
        default=None,
        description="Who decides, as `people:` names them (`tg:user:42`); checked against "
        "the card's approvers when the brain has `people:`.",
    )


class EventBody(Body):
    """`POST /v1/events/{event}`: the event's payload, handed to the hooks it fires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    payload: JSONObject = Field(default_factory=dict, max_length=MAX_LIST)
    bot: Name | None = None
    chat: Name | None = None
    thread: Name | None = None
    model: ModelSpec | None = None
    event_id: Name | None = Field(
        default=None, description="The event's own id: firing it again starts nothing new."
    )
