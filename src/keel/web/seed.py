"""A brain's seed: steps `keel serve` plays into a new database once, so it opens with turns
and runs.

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
      - run: {run: "heartbeat:invoice-chase", chat: "tg:chat:-1004000000001",
              model: "scripted:seed/invoice-chase.json"}
      - fire: {event: ticket.opened, payload: {ticket: T-480}, bot: desk,
               chat: "tg:chat:-1003000000001", thread: t-480}

Each step is the body of the route of its name (`POST /v1/turns`, `/v1/send`, `/v1/bind`,
`/v1/runs`, and `/v1/events/{event}` with the event in the body), plus, for a turn, the
bot's `answer` (recorded after it as a plain send, so later turns have history) and
`refused: true` when it asks for a link the brain must refuse, and, for a send,
`refused: true` when the brain must refuse it; an expected refusal is logged as the
example it is, a missing one as a warning. A turn is prepared and recorded as
`keel turn` records it; no model is asked.

Turn, send and bind steps are played when the server is built, spaced apart and ending
now. Run and fire steps start real runs through the server's runs backend, once its worker
is up (`play_runs`, called by `DurableRuns.when_open` before the first request): each
under an id made from the seed's digest and the step's number, so playing them again
starts nothing new. A step's `model` may be `scripted:FILE` with FILE inside the brain
(relative to its root); a file outside it is refused. A server without the worker
(`--no-worker`, a database in memory) skips them with one note (`skip_runs`).

It is played when the database is new — no turn recorded yet — and never again: a row in
`keel_seeds` records it (or records that the database already held turns), taken under
the database's write lock (SQLite) or an advisory lock (PostgreSQL) so two servers
starting on one database play it once; the server that took it plays its runs too. A step
the brain no longer accepts, or a run that cannot start, is logged and skipped; the seed
never stops a server from starting.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from sqlalchemy import Connection, select, text

from keel.brain.document import locate, parse_yaml
from keel.brain.problems import plural
from keel.errors import ContentError, KeelError, Refused, UsageError
from keel.link.values import Conversation, TurnRequest
from keel.log import logger
from keel.runtime.engine import Engine
from keel.runtime.model_specs import chosen_by_caller
from keel.store import schema
from keel.web.bodies import (
    BindBody,
    Body,
    EventBody,
    Name,
    RunBody,
    SendBody,
    Text,
    TurnBody,
    entries,
    run_ref,
)
from keel.web.runs import RunsBackend, Where
from keel.web.service import Seeded

SEED_FILE = "seed.yaml"
MAX_STEPS = 10_000
LOG = logger("seed")
# The lock's second key on PostgreSQL (the first is the schema), beside the migrations'.
_LOCK = 0x73656564  # "seed"

seeds = schema.seeds
# Told (played, of) after each step `seed_once` plays.
Progress = Callable[[int, int], None]


class TurnStep(TurnBody):
    answer: Text = ""
    # The turn asks for a link the brain must refuse (another client's key in a pinned
    # room): the refusal is the example, said as such, not warned of.
    refused: bool = False


class SendStep(SendBody):
    refused: bool = False


def _model_in_brain(value: str | None, info: ValidationInfo) -> str | None:
    """A step's model spec, checked; a scripted file is the brain's (relative to its root,
    made absolute here), never one outside it — a seed comes with a brain, and must not
    make the server read the machine's other files."""
    if value is None:
        return None
    root = (info.context or {}).get("root")
    if not isinstance(root, Path):
        raise ValueError("a seed's models are checked against its brain: read it with read_seed")
    try:
        # Read when its step starts: a missing file skips that step, not the whole seed.
        return chosen_by_caller(value, root, any_server=True, read_now=False)
    except UsageError as exc:
        raise ValueError(str(exc)) from None


class StartStep(RunBody):
    """`POST /v1/runs`: a heartbeat or scenario, started once the runs worker is up."""

    @field_validator("run")
    @classmethod
    def _not_a_hook(cls, value: str) -> str:
        if value.startswith("hook:"):
            raise ValueError("a hook runs when its event fires — write a fire: step with its event")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _model_in_brain(value, info)


class FireStep(EventBody):
    """`POST /v1/events/{event}`, the event in the body: the hooks listening to it run."""

    event: Name

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _model_in_brain(value, info)


class Step(Body):
    """One step: exactly one of `turn`, `send`, `bind`, `run`, `fire`."""

    turn: TurnStep | None = None
    send: SendStep | None = None
    bind: BindBody | None = None
    run: StartStep | None = None
    fire: FireStep | None = None

    @model_validator(mode="after")
    def _one(self) -> Step:
        kinds = (self.turn, self.send, self.bind, self.run, self.fire)
        if sum(x is not None for x in kinds) != 1:
            raise ValueError("a step is exactly one of turn:, send:, bind:, run: or fire:")
        return self

    @property
    def starts_runs(self) -> bool:
        """Whether the step starts runs, and so waits for the runs worker."""
        return self.run is not None or self.fire is not None


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

    def numbered(self, *, runs: bool) -> list[tuple[int, Step]]:
        """The steps that start runs (`runs=True`) or the others, each with its number in
        the file (from 1, as the log names it)."""
        return [(n, s) for n, s in enumerate(self.steps, 1) if s.starts_runs == runs]


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed:
    """What `seed_once` did: the steps it played, or why none; and the seed itself when
    this server took it and its run steps are still to start (`play_runs`, `skip_runs`)."""

    seeded: Seeded
    seed: Seed | None = None


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
        parsed = SeedFile.model_validate(data, context={"root": root})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(part) for part in loc) or "the file"
        message = first["msg"].removeprefix("Value error, ")
        raise ContentError(shown, f"{where}: {message}", line=locate(content, loc)) from None
    return Seed(
        path=path,
        digest=hashlib.sha256(raw).hexdigest()[:16],
        spacing=timedelta(minutes=parsed.spacing_minutes),
        steps=tuple(parsed.steps),
    )


def seed_once(
    engine: Engine, *, now: datetime | None = None, progress: Progress | None = None
) -> Claimed:
    """Play the brain's seed into its database if the database is new; say what happened.

    Only its turn, send and bind steps are played here, each told to `progress` as
    (played, of); when it has run steps, the seed comes back with the claim, for
    `play_runs` once the runs worker is up."""
    try:
        seed = read_seed(engine.source.root)
    except ContentError as exc:
        LOG.warning("seed not played: %s", exc)
        return Claimed(seeded=Seeded(note=f"not played: {exc}"))
    if seed is None:
        return Claimed(seeded=Seeded(note=f"no {SEED_FILE} in the brain"))
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    with engine.store.transaction() as tx:
        claim = _claim(tx.connection, seed, moment)
    if claim is not None:
        return Claimed(seeded=Seeded(note=claim))
    played = play(engine, seed, moment, progress=progress)
    # Counted out of every step, run steps too: the dashboard counts the runs started.
    note = f"played {played} of {len(seed.steps)} steps"
    LOG.info("%s: %s", SEED_FILE, note)
    later = len(seed.numbered(runs=True))
    if later:
        note += f"; {plural(later, 'run step')} wait for the runs worker"
    return Claimed(seeded=Seeded(played=played, note=note), seed=seed if later else None)


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


def play(engine: Engine, seed: Seed, now: datetime, *, progress: Progress | None = None) -> int:
    """Play every turn, send and bind step, spaced `seed.spacing` apart and ending at `now`;
    the steps played."""
    played = 0
    steps = seed.numbered(runs=False)
    for index, (number, step) in enumerate(steps):
        at = now - seed.spacing * (len(steps) - 1 - index)
        try:
            played += _step(engine, step, number, at)
        except KeelError as exc:
            LOG.warning("seed step %s skipped: %s", number, exc)
        if progress is not None:  # out of every step, as the seed's note counts
            progress(index + 1, len(seed.steps))
    return played


def _step(engine: Engine, step: Step, number: int, at: datetime) -> int:
    if step.turn is not None:
        turn = step.turn
        request = turn.request(at)
        if turn.refused:
            _refusing_turn(engine, request, number)
        else:
            engine.prepare(request)
        if turn.answer:
            engine.send(
                request.conversation, turn.answer, message_id=f"seed-answer-{number}", at=at
            )
        return 1
    if step.send is not None:
        return _send(engine, step.send, number, at)
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


def _refusing_turn(engine: Engine, request: TurnRequest, number: int) -> None:
    """A turn the seed plays for the link it refuses: that refusal is said as the example it
    is (the turn's own log would warn of it), and its absence as a warning."""
    with _held_back(logger("turn")):
        prepared, _ = engine.prepare(request)
    for refusal in prepared.refused:
        key = f"@{refusal.entity}" if refusal.entity is not None else ""
        LOG.info(
            "seed step %s: %s link to %s%s refused, as the seed expects: %s",
            number,
            refusal.kind,
            refusal.context,
            key,
            refusal.reason,
        )
    if not prepared.refused:
        LOG.warning("seed step %s refused no link, but the seed expects a refusal", number)


@contextmanager
def _held_back(log: logging.Logger) -> Iterator[None]:
    """`log`'s warnings dropped for the block (the seed plays before the server serves:
    nothing else logs meanwhile)."""
    drop = _Below(logging.WARNING)
    log.addFilter(drop)
    try:
        yield
    finally:
        log.removeFilter(drop)


class _Below(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


def _send(engine: Engine, send: SendStep, number: int, at: datetime) -> int:
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
        LOG.info("seed step %s refused, as the seed expects: %s", number, exc)
        return 1
    if send.refused:
        LOG.warning("seed step %s was sent, but the seed expects it refused", number)
    return 1


# -- run steps, once the runs worker is up ----------------------------------------------------


def play_runs(runs: RunsBackend, claimed: Claimed) -> Seeded:
    """Start the claimed seed's runs through the server's runs backend; what the seed did,
    all told. Called once its worker is up: a worker that is not says why, once."""
    seed = claimed.seed
    if seed is None:
        return claimed.seeded
    problem = runs.unavailable()
    if problem is not None:
        return skip_runs(claimed, problem)
    steps = seed.numbered(runs=True)
    started = 0
    for number, step in steps:
        try:
            started += _run_step(runs, seed, number, step)
        except KeelError as exc:
            LOG.warning("seed step %s skipped: %s", number, exc)
        # The seed must never stop the server: whatever else a run's start raises (DBOS's
        # own errors included) skips that step, logged whole.
        except Exception:
            LOG.exception("seed step %s skipped: its run could not start", number)
    LOG.info("%s: started the runs of %s of %s run steps", SEED_FILE, started, len(steps))
    played = claimed.seeded.played + started
    note = f"played {played} of {len(seed.steps)} steps"
    LOG.info("%s: %s", SEED_FILE, note)
    return Seeded(played=played, note=note)


def skip_runs(claimed: Claimed, reason: str) -> Seeded:
    """Leave the claimed seed's run steps unplayed (a server without the runs worker), with
    one note saying why; what the seed did."""
    seed = claimed.seed
    if seed is None:
        return claimed.seeded
    skipped = plural(len(seed.numbered(runs=True)), "run step")
    LOG.info("%s: %s not played: %s", SEED_FILE, skipped, reason)
    played = claimed.seeded.played
    note = f"played {played} of {len(seed.steps)} steps; {skipped} skipped: {reason}"
    return Seeded(played=played, note=note)


def _run_step(runs: RunsBackend, seed: Seed, number: int, step: Step) -> int:
    """Start the step's runs under ids of the seed's own, so a replay starts nothing new."""
    tag = f"seed-{seed.digest[:8]}-{number}"
    if step.run is not None:
        start = step.run.start(model=step.run.model)
        ref = start.run
        started = [runs.start(start, run_id=f"{ref.kind}-{ref.id}-{tag}")]
    elif step.fire is not None:
        fire = step.fire
        started = list(
            runs.fire(
                fire.event,
                fire.payload,
                Where(bot=fire.bot, chat=fire.chat, thread=fire.thread),
                model=fire.model,
                event_id=fire.event_id or tag,
            )
        )
        if not started:
            LOG.warning("seed step %s started nothing: no hook listens to %r", number, fire.event)
            return 0
    else:
        return 0
    for run in started:
        LOG.info("seed step %s: run %s is %s", number, run.id, run.status)
    return 1
