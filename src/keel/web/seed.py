"""A brain's seed: steps `keel serve` plays into a new database once, so it opens with turns.

A brain may hold `seed.yaml` at its root (the loader reads only `constitution/`,
`features/` and `state/`, so it never sees it):

    version: 1
    spacing_minutes: 3          # the steps are played this far apart, ending now
    steps:
      - turn: {bot: nova, chat: "tg:chat:-1002000000101", input: "Hi", answer: "Hello!"}
      - send: {bot: nova, chat: "tg:user:1", text: "Tonight: Whiplash",
               run: "heartbeat:evening-film", refused: true}
      - bind: {context: ticket, entity: T-481, chat: "tg:chat:-1003000000001",
               thread: "77", role: support}

Each step is the body of the route of its name (`POST /v1/turns`, `/v1/send`, `/v1/bind`),
plus, for a turn, the bot's `answer` (recorded after it as a plain send, so later turns
have history) and, for a send, `refused: true` when the brain must refuse it. A turn is
prepared and recorded as `keel turn` records it; no model is asked.

It is played when the database is new — no turn recorded yet — and never again: a row in
`keel_seeds` records it (or records that the database already held turns), taken under
the database's write lock (SQLite) or an advisory lock (PostgreSQL) so two servers
starting on one database play it once. A step the brain no longer accepts is logged and
skipped; the seed never stops a server from starting.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator
from sqlalchemy import Connection, select, text

from keel.brain.document import locate, parse_yaml
from keel.errors import ContentError, KeelError, Refused
from keel.link.values import Conversation
from keel.log import logger
from keel.runtime.engine import Engine
from keel.store import schema
from keel.web.bodies import BindBody, Body, SendBody, Text, TurnBody, entries, run_ref
from keel.web.service import Seeded

SEED_FILE = "seed.yaml"
MAX_STEPS = 10_000
LOG = logger("seed")
# The lock's second key on PostgreSQL (the first is the schema), beside the migrations'.
_LOCK = 0x73656564  # "seed"

seeds = schema.seeds


class TurnStep(TurnBody):
    answer: Text = ""


class SendStep(SendBody):
    refused: bool = False


class Step(Body):
    """One step: exactly one of `turn`, `send`, `bind`."""

    turn: TurnStep | None = None
    send: SendStep | None = None
    bind: BindBody | None = None

    @model_validator(mode="after")
    def _one(self) -> Step:
        if sum(x is not None for x in (self.turn, self.send, self.bind)) != 1:
            raise ValueError("a step is exactly one of turn:, send: or bind:")
        return self


class SeedFile(Body):
    version: Literal[1]
    spacing_minutes: int = Field(default=3, ge=0, le=1440)
    steps: list[Step] = Field(max_length=MAX_STEPS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seed:
    """A brain's seed file, read and checked."""

    path: Path
    digest: str
    spacing: timedelta
    steps: tuple[Step, ...]


def read_seed(root: Path) -> Seed | None:
    """The brain's `seed.yaml`, or None when it has none; `ContentError` names the file and
    line of what does not hold."""
    path = root / SEED_FILE
    if not path.is_file():
        return None
    raw = path.read_bytes()
    shown = SEED_FILE
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError(shown, "not UTF-8 text — save it as UTF-8") from None
    data = parse_yaml(shown, content)
    try:
        parsed = SeedFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(part) for part in loc) or "the file"
        raise ContentError(shown, f"{where}: {first['msg']}", line=locate(content, loc)) from None
    return Seed(
        path=path,
        digest=hashlib.sha256(raw).hexdigest()[:16],
        spacing=timedelta(minutes=parsed.spacing_minutes),
        steps=tuple(parsed.steps),
    )


def seed_once(engine: Engine, *, now: datetime | None = None) -> Seeded:
    """Play the brain's seed into its database if the database is new; say what happened."""
    try:
        seed = read_seed(engine.source.root)
    except ContentError as exc:
        LOG.warning("seed not played: %s", exc)
        return Seeded(note=f"not played: {exc}")
    if seed is None:
        return Seeded(note=f"no {SEED_FILE} in the brain")
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    with engine.store.transaction() as tx:
        claim = _claim(tx.connection, seed, moment)
    if claim is not None:
        return Seeded(note=claim)
    played = play(engine, seed, moment)
    LOG.info("seed played: %s of %s steps of %s", played, len(seed.steps), SEED_FILE)
    return Seeded(played=played, note=f"played {played} of {len(seed.steps)} steps")


def _claim(conn: Connection, seed: Seed, now: datetime) -> str | None:
    """Record that the seed is played now; or why it is not (None: play it)."""
    if conn.dialect.name == "postgresql":
        conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '')), :k)"),
            {"k": _LOCK},
        )
    done = conn.execute(select(seeds).where(seeds.c.name == SEED_FILE)).first()
    if done is not None:
        return f"not played: the database was seeded on {done.at:%Y-%m-%d %H:%M} ({done.note})"
    held = conn.execute(select(schema.turn_journal.c.id).limit(1)).first() is not None
    note = "the database already held turns" if held else f"{len(seed.steps)} steps"
    conn.execute(
        seeds.insert().values(
            name=SEED_FILE, digest=seed.digest, played=0 if held else 1, note=note, at=now
        )
    )
    return f"not played: {note}" if held else None


def play(engine: Engine, seed: Seed, now: datetime) -> int:
    """Play every step, spaced `seed.spacing` apart and ending at `now`; the steps played."""
    played = 0
    count = len(seed.steps)
    for index, step in enumerate(seed.steps):
        at = now - seed.spacing * (count - 1 - index)
        try:
            played += _step(engine, step, index, at)
        except KeelError as exc:
            LOG.warning("seed step %s skipped: %s", index + 1, exc)
    return played


def _step(engine: Engine, step: Step, index: int, at: datetime) -> int:
    if step.turn is not None:
        turn = step.turn
        request = turn.request(at)
        engine.prepare(request)
        if turn.answer:
            engine.send(
                request.conversation, turn.answer, message_id=f"seed-answer-{index + 1}", at=at
            )
        return 1
    if step.send is not None:
        return _send(engine, step.send, index, at)
    if step.bind is not None:
        bind = step.bind
        engine.bind(
            context=bind.context,
            chat=bind.chat,
            entity=bind.entity,
            thread=bind.thread,
            bot=bind.bot,
            role=bind.role,
        )
    return 1


def _send(engine: Engine, send: SendStep, index: int, at: datetime) -> int:
    try:
        engine.send(
            Conversation(bot=send.bot, chat=send.chat, thread=send.thread),
            send.text,
            message_id=send.message_id,
            at=send.at or at,
            run=run_ref(send.run),
            entity=send.entity,
            reach=entries(send.reach),
            about_entity=send.about_entity,
            about_context=send.about_context,
            card=send.card,
        )
    except Refused as exc:
        if not send.refused:
            raise
        LOG.info("seed step %s refused, as the seed expects: %s", index + 1, exc)
        return 1
    if send.refused:
        LOG.warning("seed step %s was sent, but the seed expects it refused", index + 1)
    return 1
