"""The values a turn's linking works with: requests, links, refusals, what the stores hold.

Link kinds, strongest first: run, chat, reply, code, ask, always. When one (context,
entity) pair is linked several ways, the strongest link is the one the turn carries, and
when the budget runs short the weakest are the first to become stubs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from keel.brain.document import is_utf8
from keel.brain.limits import MAX_BOT_CHARS, MAX_CHAT_ID_CHARS, MAX_ENTITY_CHARS
from keel.brain.specs import EntityKind, ReachEntry
from keel.errors import UsageError

LinkKind = Literal["run", "chat", "reply", "code", "ask", "always"]
LINK_KINDS: tuple[LinkKind, ...] = ("run", "chat", "reply", "code", "ask", "always")
STRENGTH: dict[LinkKind, int] = {kind: rank for rank, kind in enumerate(LINK_KINDS)}
# Links that stick for `keep` turns after the one that made them.
STICKY: frozenset[LinkKind] = frozenset({"reply", "code", "ask"})


def entity_problem(entity: str | None) -> str | None:
    """Why an entity key from a turn cannot be used, or None when it can (None is no key)."""
    if entity is None:
        return None
    if not 0 < len(entity) <= MAX_ENTITY_CHARS:
        return f"an entity key must be 1 to {MAX_ENTITY_CHARS} characters (got {len(entity)})"
    return _text_problem(entity, "an entity key")


def _text_problem(value: str, what: str) -> str | None:
    # Both databases refuse what is not UTF-8 (a lone surrogate, from bytes that were not
    # UTF-8) and PostgreSQL refuses NUL; no id needs a control character.
    if value.isprintable():
        return None
    if not is_utf8(value):
        return f"{what} is not valid UTF-8 ({value!r})"
    return f"{what} holds a control character ({value!r}) — ids are printable text"


def id_problem(value: str, what: str, limit: int = MAX_CHAT_ID_CHARS) -> str | None:
    """Why a bot, chat, thread or message id a caller names cannot be used, or None."""
    if not value:
        return f"{what} is empty"
    if len(value) > limit:
        return f"{what} is {len(value):,} characters long; at most {limit} (docs/limits.md)"
    return _text_problem(value, what)


def check_text(value: str, what: str) -> None:
    """Refuse text that cannot be stored (not UTF-8, or holding NUL), naming it."""
    if "\x00" in value:
        raise UsageError(f"{what} holds a NUL character — remove it")
    if not value.isascii() and not is_utf8(value):
        raise UsageError(f"{what} is not valid UTF-8 — pass text, not raw bytes")


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """Where a turn happens: a bot in a chat, in one thread of it or the whole chat."""

    bot: str
    chat: str
    thread: str | None = None

    def __post_init__(self) -> None:
        # Every way in (CLI, MCP, HTTP, a run, a library call) names a room here, so the
        # same bounds hold everywhere and nothing unstorable reaches either database.
        problem = (
            id_problem(self.bot, "the bot", MAX_BOT_CHARS)
            or id_problem(self.chat, "the chat id")
            or (None if self.thread is None else id_problem(self.thread, "the thread id"))
        )
        if problem is not None:
            if self.thread == "":
                problem += " — leave the thread out for the whole chat"
            raise UsageError(problem)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRef:
    """What a run is a run of: `heartbeat:<id>`, `hook:<id>` or `scenario:<id>`."""

    kind: EntityKind
    id: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """Everything the caller says about one turn, before Keel decides what it carries.

    `reach` replaces the run's reach for this fire or step; `entity` keys the reach's one
    keyed context; `attach` are brain code's or an engage policy's entries (code links);
    `open` are the agent's `context_open` calls (ask links).
    """

    conversation: Conversation
    now: datetime
    role: str | None = None
    # A direct message: with no role named, the bot's DM rule applies before its default.
    dm: bool = False
    input: str = ""
    reply_to: tuple[str, ...] = ()
    run: RunRef | None = None
    entity: str | None = None
    reach: tuple[ReachEntry, ...] | None = None
    attach: tuple[ReachEntry, ...] = ()
    open: tuple[ReachEntry, ...] = ()
    # Incoming messages merged into this turn, each asked of the bot's chat policy (none:
    # the input is the one message).
    messages: tuple[str, ...] = ()
    # Who spoke, in the surface's id form (`tg:user:<id>`); None when the caller cannot
    # say (a run, a library call). Decisions on cards are checked against it.
    sender: str | None = None

    def __post_init__(self) -> None:
        check_text(self.input, "the turn's input")
        for message in self.messages:
            check_text(message, "an incoming message")
        for ident in self.reply_to:
            if (problem := id_problem(ident, "the id of the message replied to")) is not None:
                raise UsageError(problem)
        if self.sender is not None and (problem := id_problem(self.sender, "the sender")):
            raise UsageError(problem)


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One (context, entity) a turn carries, and the link that brought it.

    `kept` is set when the link rides only because an earlier turn made it: `kind` stays
    the link it was (where it ranks when budgets cut), and what a person reads says kept.
    """

    context: str
    entity: str | None
    kind: LinkKind
    feature: str
    kept: Kept | None = None
    # The agent also asked for it by name (a turn's `open`, or a kept open) while a
    # stronger link carries it: it is delivered as an open is (`keel.budget.fit`).
    asked: bool = False
    # (context, entity): what the turn's stages key a link by, made once with the link.
    pair: tuple[str, str | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pair", (self.context, self.entity))

    @property
    def shown(self) -> str:
        """The link as a person reads it: its kind, or `kept` for a kept one."""
        return "kept" if self.kept is not None else self.kind

    def kept_json(self) -> dict[str, Any] | None:
        return None if self.kept is None else self.kept.to_json(self.kind)


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """A kept link's story: the turn that made it, and the turns it still rides after this."""

    from_turn: int
    turns_left: int

    def __str__(self) -> str:
        return f"kept from turn {self.from_turn} ({self.turns_left} left)"

    def to_json(self, link: str) -> dict[str, Any]:
        """As `--json` and the API show it, with the link it was (`link`)."""
        return {"link": link, "from_turn": self.from_turn, "turns_left": self.turns_left}


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """A link Keel would not make, and why (shown to the agent and logged)."""

    context: str
    entity: str | None
    kind: LinkKind
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    """A chat (or one thread) bound to a context, and the entity it is about.

    `bot` None is a binding for every bot of the brain; `thread` None the whole chat.
    `source` says where it lives: a group rule of access.yaml, or a `context_bind` call.
    """

    context: str
    entity: str | None
    chat: str
    thread: str | None = None
    bot: str | None = None
    source: Literal["access", "tool"] = "tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """What a sent message carries: the run that sent it and the reach a reply brings back."""

    bot: str
    chat: str
    message_id: str
    sent_at: datetime
    thread: str | None = None
    feature: str | None = None
    run: str | None = None
    reach: tuple[ReachEntry, ...] = ()
    pending_card: bool = False
    # The context whose lines the message shows: a widget, kept at any age.
    widget: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptLink:
    """An inferred link that sticks to a conversation up to and including `until_turn`."""

    context: str
    entity: str | None
    kind: LinkKind
    feature: str
    until_turn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored:
    """What the stores hold that bears on one turn, read before linking."""

    turn: int
    origins: tuple[Origin, ...] = ()
    bindings: tuple[Binding, ...] = ()
    kept: tuple[KeptLink, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkResult:
    """The outcome of linking: what attaches, what was refused, what to keep, the pins."""

    role: str
    links: tuple[Link, ...]
    refused: tuple[Refusal, ...] = ()
    keep: tuple[KeptLink, ...] = ()
    # Reply features whose kept links restart their count this turn.
    restart_features: frozenset[str] = frozenset()
    pins: dict[str, str | None] = field(default_factory=dict)
    log: tuple[str, ...] = ()
    # Whose rows the room may see (`keel.link.bindings.tenant_of` of `pins`).
    tenant: Tenant | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Tenant:
    """Whose rows a pinned room may see: in every view with `column`, only `key`'s rows
    (`key` None: the room is pinned to no tenant, and such views show none).

    `withheld` says why the room may see no view at all: the brain's tenancy cannot be
    known (MANIFEST.yaml did not load), and the room has a pin that may make it a tenant's.
    """

    column: str | None
    key: str | None
    withheld: str | None = None
