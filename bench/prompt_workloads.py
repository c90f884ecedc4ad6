"""The two workloads of `prompt_size.py`, as plain data: no Keel import here.

A workload is a brain directory and a mixed sequence of steps: turns, the messages runs
send, and chat bindings (what the `context_bind` tool or a hook does). Each conversation is
written as its own script, in order; the scripts are then interleaved with a seeded shuffle
that keeps every script's own order, so turns of many rooms alternate as they would in a
deployment while each room's keep counts and replies stay meaningful.

- `reference_workload()` plays the reference brain (examples/brain): every link kind and
  every worked example of its README.
- `generate_brain()` writes a brain shaped like a real deployment (deterministic: the same
  seed writes the same bytes) and `generated_workload()` plays it.

Brain code (a `*.context.py` match, a hook's gate) is run by the host before a turn, not by
the turn's preparation: where a step depends on it, the step carries what the code answers
(`attach`, `reach`) and its label says so.
"""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "examples" / "brain"
Entry = tuple[str, str | None]  # (context, entity key or None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One turn, as `keel turn` takes it; `answer` is recorded after it as the bot's reply."""

    label: str
    bot: str
    chat: str
    thread: str | None = None
    dm: bool = False
    role: str | None = None
    input: str = ""
    reply_to: tuple[str, ...] = ()
    run: str | None = None  # "heartbeat:evening-film"
    entity: str | None = None
    reach: tuple[Entry, ...] | None = None
    attach: tuple[Entry, ...] = ()
    open: tuple[Entry, ...] = ()
    answer: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Send:
    """A message sent from a run (`keel send`); `refused` says the send must be refused."""

    label: str
    bot: str
    chat: str
    text: str
    message_id: str
    thread: str | None = None
    run: str | None = None
    entity: str | None = None
    reach: tuple[Entry, ...] | None = None
    about_entity: str | None = None
    refused: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Bind:
    """`context_bind` in a chat or thread, as the role that answers there for `bot`."""

    label: str
    bot: str
    chat: str
    context: str
    entity: str | None
    thread: str | None = None
    dm: bool = False


Step = Turn | Send | Bind


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    name: str
    about: str
    root: Path
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Room:
    """One conversation: a bot in a chat (a thread of it, a DM), making its steps short."""

    name: str
    bot: str
    chat: str
    thread: str | None = None
    dm: bool = False

    def say(
        self,
        text: str,
        answer: str,
        *,
        note: str = "chat",
        open: tuple[Entry, ...] = (),
        reply_to: str | None = None,
        attach: tuple[Entry, ...] = (),
        role: str | None = None,
    ) -> Turn:
        """A person's message, and the bot's answer recorded after the turn."""
        return Turn(
            label=f"{self.name}: {note}",
            bot=self.bot,
            chat=self.chat,
            thread=self.thread,
            dm=self.dm,
            role=role,
            input=text,
            reply_to=(reply_to,) if reply_to else (),
            attach=attach,
            open=open,
            answer=answer,
        )

    def run(
        self, run: str, *, entity: str | None = None, reach: tuple[Entry, ...] | None = None
    ) -> Turn:
        """A run's turn: its input is the entity's prompt; what it posts is a `send`."""
        note = run.split(":")[1] + (f" ({entity})" if entity else "")
        if reach is not None:
            note += " reach " + ",".join(c for c, _ in reach)
        return Turn(
            label=f"{self.name}: {note}",
            bot=self.bot,
            chat=self.chat,
            thread=self.thread,
            run=run,
            entity=entity,
            reach=reach,
        )

    def send(
        self,
        run: str,
        message_id: str,
        text: str,
        *,
        about: str | None = None,
        entity: str | None = None,
        reach: tuple[Entry, ...] | None = None,
        refused: bool = False,
    ) -> Send:
        """What the run posts here; `about` keys it (about: {entity})."""
        return Send(
            label=f"{self.name}: post {message_id}",
            bot=self.bot,
            chat=self.chat,
            thread=self.thread,
            text=text,
            message_id=message_id,
            run=run,
            entity=entity,
            reach=reach,
            about_entity=about,
            refused=refused,
        )

    def bind(self, context: str, entity: str | None) -> Bind:
        """`context_bind` here, as a hook or a pipeline would after its first message."""
        return Bind(
            label=f"{self.name}: bind {context}={entity}",
            bot=self.bot,
            chat=self.chat,
            thread=self.thread,
            dm=self.dm,
            context=context,
            entity=entity,
        )


def interleave(scripts: Sequence[Sequence[Step]], seed: int) -> tuple[Step, ...]:
    """Merge the scripts at random, each script's own order kept."""
    rng = random.Random(seed)
    queues = [list(s) for s in scripts if s]
    merged: list[Step] = []
    while queues:
        # Weighted by what is left, so long scripts do not bunch up at the end.
        queue = rng.choices(queues, weights=[len(q) for q in queues])[0]
        merged.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return tuple(merged)


# ---------------------------------------------------------------------------------------
# The reference brain


def reference_workload(root: Path = REFERENCE, seed: int = 11) -> Workload:
    """55 turns over every link kind and worked example of the reference brain."""
    family = Room("family", "nova", "tg:chat:-1001000000001")
    acme = Room("acme", "nova", "tg:chat:-1002000000101")
    globex = Room("globex", "nova", "tg:chat:-1002000000102")
    initech = Room("initech", "nova", "tg:chat:-1002000000103")
    staff = Room("staff", "nova", "tg:chat:-1002000000200")
    partners = Room("partners", "nova", "tg:chat:-1002000000300")  # no rule: role named
    books = Room("books", "nova", "tg:chat:-1004000000001")  # nova's default: bookkeeper
    coach = Room("coach", "nova", "tg:user:1", dm=True)
    beat = Room("coach", "nova", "tg:user:1")  # the heartbeats run in the owner's chat
    dutch = Room("dutch", "tutor", "tg:user:2", dm=True)
    tutor = Room("dutch", "tutor", "tg:user:2")
    forum = Room("forum", "desk", "tg:chat:-1003000000001")
    t481 = Room("T-481 topic", "desk", "tg:chat:-1003000000001", thread="t-481")
    t483 = Room("t-483 topic", "desk", "tg:chat:-1003000000001", thread="t-483")
    quayside = Room("p_913 chat", "desk", "tg:user:5513001", dm=True)
    fernhill = Room("p_912 chat", "desk", "tg:user:5512001", dm=True)
    largo = Room("largo", "largo", "tg:user:1", dm=True)
    largo_beat = Room("largo", "largo", "tg:user:1")
    kept, refused = "kept link", "open refused"
    chase, plan = "heartbeat:invoice-chase", "heartbeat:morning-plan"
    film, film_day = "heartbeat:evening-film", "heartbeat:film-of-day"
    scripts: list[list[Step]] = [
        [
            family.say("Add oat milk and coffee beans", "Added both."),
            family.say("What's still on the list?", "Oat milk, apples, tabs, candles, beans."),
            family.say("Mila got the apples", "Ticked off apples — thanks Mila."),
            family.say("Who added the candles?", "Joost, on 14 April."),
        ],
        [
            acme.say("When does our retainer renew?", "On 30 September 2025."),
            acme.say(
                "And what does Globex pay?",
                "Only Acme here.",
                note=refused,
                open=_o("client=globex"),
            ),
            acme.say("How many open requests?", "Three.", note="open", open=_o("client")),
            acme.say("Please confirm the anvil launch date.", "Wile gets the date today."),
        ],
        [
            globex.say("Where is the brand refresh?", "In progress; review on Thursday."),
            globex.say(
                "Can we see Acme's plan?", "No, sorry.", note=refused, open=_o("client=acme")
            ),
        ],
        [initech.say("We want to start a campaign in June.", "Noted — a plan by Monday.")],
        [
            staff.say("Pieter's leave days left?", "21 left.", note="open", open=_o("leave")),
            staff.say("And Ayla?", "1 day left.", note=kept),
            staff.say("Can Pieter take two weeks in July?", "That goes to the partner.", note=kept),
        ],
        [
            partners.say(
                "What came in this month?",
                "EUR 25,000 in, EUR 20,600 out.",
                note="open",
                open=_o("cashflow"),
                role="controller",
            )
        ],
        [
            books.run(chase),
            books.send(chase, "chase-1", "Reminder drafted for 2025-034; 2025-031 needs your OK."),
            books.say("What got paid this month?", "2025-029 and 2025-033."),
            books.say("Late fee policy?", "2% a month from day 45.", note="open", open=_o("rates")),
            books.say("Can I waive it for Kettle?", "Yes, it is your call.", note=kept),
            books.run(chase),
        ],
        [
            beat.run(plan),
            beat.send(plan, "plan-1", "Today: water, stretching, three tasks, a walk."),
            coach.say("Done with the stretching", "Nice — the one you skipped yesterday."),
            beat.run(film),
            beat.send(film, "film-0", "Tonight: Whiplash", refused=True),
            beat.send(film, "film-1", "Tonight: Whiplash (106 min).", about="tt2582802"),
            coach.say("8/10", "Stored 8/10 for Whiplash.", note="reply", reply_to="film-1"),
            coach.say("The drumming was intense", "It really is.", note=kept),
            coach.say("Something lighter next time?", "Yes, a comedy next.", note=kept),
            coach.say("What are my goals again?", "10 km, bed by 23:00, 12 books.", note=kept),
            coach.say("Good night", "Sleep well.", note="after keep"),
        ],
        [
            tutor.run("scenario:knm-practice"),
            tutor.send("scenario:knm-practice", "knm-1", "Vraag: vakantiedagen? A 10 B 20 C 25"),
            dutch.say("B", "Goed! Twintig dagen.", note="reply", reply_to="knm-1"),
            tutor.run("scenario:listen-practice"),
            tutor.send("scenario:listen-practice", "lis-1", "Luister: Bij de bakker, 3 vragen."),
            dutch.say("1 brood 2 drie 3 morgen", "Twee goed.", note="reply", reply_to="lis-1"),
            tutor.run("scenario:write-practice"),
            tutor.send("scenario:write-practice", "wri-1", "Schrijf een e-mail aan je buurvrouw."),
            dutch.say(
                "Beste buurvrouw, zaterdag geef ik een feest. Het wordt laat. Groetjes, Sam",
                "Heel goed! 8/10.",
                note="reply",
                reply_to="wri-1",
            ),
            dutch.say("Is 'het wordt laat' correct?", "Ja, helemaal.", note=kept),
            # skip.hook.py's gate answers {reach: [{context: event.skill}]}; here skill=read.
            tutor.run("hook:skip", reach=(("read", None),)),
            tutor.send("hook:skip", "skip-1", "Later vijf minuten lezen?", reach=(("read", None),)),
            dutch.say("OK, later vandaag", "Top!", note="reply", reply_to="skip-1"),
        ],
        [
            t481.run("hook:ticket-opened"),
            t481.bind("ticket", "T-481"),
            t481.send("hook:ticket-opened", "ack-481", "Hi Maria, this topic is for T-481."),
            t481.say("The lamp arrived broken. Refund?", "It needs approval; within the hour."),
            t481.say("It was 149 euros", "Noted: EUR 149.00."),
            t481.say("Can I return it instead?", "Yes.", note="open", open=_o("policy")),
            t481.say("Who pays postage?", "We do: it was faulty.", note=kept),
            t481.say("Thanks, is it approved?", "Approved: 10 working days."),
            # ticket.context.py's match links a turn whose input names T-<digits>.
            forum.say(
                "Any update on T-479?",
                "We asked the carrier for a trace.",
                note="code link (match)",
                attach=_o("ticket=T-479"),
            ),
            t483.say("Our VAT number on the invoice?", "See kb-114.", note="open", open=_o("kb")),
        ],
        [
            quayside.run("scenario:first-touch", entity="p_913"),
            quayside.send("scenario:first-touch", "ft-913", "Hi Lars — hiring?", entity="p_913"),
            quayside.bind("prospect", "p_913"),
            quayside.say("What would it cost?", "Pilot: EUR 490.", note="reply", reply_to="ft-913"),
            quayside.say("What's in the pilot?", "3 dashboards.", note="open", open=_o("offer")),
            quayside.say("We're 38 people, is pilot enough?", "Yes.", note=kept),
            fernhill.bind("prospect", "p_912"),
            fernhill.say("Dana here — talk next week?", "Tuesday 10:00?"),
        ],
        [
            largo_beat.run("heartbeat:morning-checkin"),
            largo_beat.send("heartbeat:morning-checkin", "chk-1", "Morning Robin — sleep well?"),
            largo.say("Slept fine. Report today.", "Then that's the one thing."),
            largo_beat.run(film_day),
            largo_beat.send(film_day, "lf-1", "Tonight: Perfect Days.", about="lf-003"),
            largo.say("Sounds lovely", "Tell me after.", note="reply", reply_to="lf-1"),
            largo.say("Is it long?", "Just over two hours.", note=kept),
        ],
    ]
    return Workload(
        name="reference",
        about="the reference brain (examples/brain): every link kind and worked example",
        root=root,
        steps=interleave(scripts, seed),
    )


def _o(*entries: str) -> tuple[Entry, ...]:
    """`ctx` or `ctx=KEY` entries, as `--open` / `--attach` take them."""
    parsed = (e.partition("=") for e in entries)
    return tuple((ctx, key or None) for ctx, _, key in parsed)


# ---------------------------------------------------------------------------------------
# A generated brain shaped like a deployment


@dataclass(frozen=True, slots=True)
class FeatureShape:
    """One feature of the generated brain: the entity its keyed contexts are about."""

    name: str
    noun: str
    prefix: str  # entity keys are f"{prefix}-{n:03d}"
    entities: int
    chat: bool  # its noun context attaches on a chat binding
    always: str | None  # its small `always` context's suffix, if it has one
    topics: tuple[str, str, str]

    @property
    def key(self) -> str:
        """The entity key column of its keyed views."""
        return f"{self.noun}_id"


FEATURES: tuple[FeatureShape, ...] = tuple(FeatureShape(*row) for row in (
    ("crm", "account", "acc", 40, True, "priorities", ("renewals", "pricing", "contacts")),
    ("billing", "invoice", "inv", 60, False, None, ("terms", "credit-notes", "vat")),
    ("support", "ticket", "T", 80, True, "incidents", ("macros", "sla", "known-issues")),
    ("logistics", "shipment", "shp", 70, False, None, ("carriers", "customs", "depots")),
    ("ops", "site", "site", 24, True, "rota", ("maintenance", "suppliers", "safety")),
    ("people", "employee", "emp", 45, False, None, ("leave", "onboarding", "expenses")),
    ("marketing", "campaign", "cmp", 30, False, None, ("channels", "brand", "budgets")),
    ("legal", "contract", "ctr", 36, False, None, ("clauses", "ndas", "renewal-terms")),
))  # fmt: skip


@dataclass(frozen=True, slots=True)
class RoleShape:
    """A role: its own features (it is their runs' agent) and the ones it may also read."""

    name: str
    bot: str
    primary: tuple[str, ...]
    secondary: tuple[str, ...]


ROLES: tuple[RoleShape, ...] = (
    RoleShape("account-manager", "hq", ("crm",), ("marketing", "legal")),
    RoleShape("support-agent", "desk", ("support", "logistics"), ("billing",)),
    RoleShape("finance-clerk", "ledger", ("billing", "legal"), ("crm",)),
    RoleShape("ops-lead", "ops", ("ops", "people"), ("logistics",)),
    RoleShape("sales-rep", "buzz", ("marketing",), ("crm", "support")),
)
STATE_ROWS = 20
ACCOUNT_GROUPS = {  # group chat -> the account access.yaml binds it to
    "tg:chat:-1009000000101": "acc-003",
    "tg:chat:-1009000000102": "acc-011",
    "tg:chat:-1009000000103": "acc-017",
    "tg:chat:-1009000000104": "acc-025",
}
SITE_GROUPS = {"tg:chat:-1009000000201": "site-004", "tg:chat:-1009000000202": "site-009"}
SUPPORT_FORUM = "tg:chat:-1009000000300"
STAFF_GROUP = "tg:chat:-1009000000400"

_WORDS = {
    "subject": (
        "the owner", "the customer", "the account lead", "finance", "the site manager",
        "the on-call engineer", "legal", "the team lead", "the requester", "the vendor",
    ),
    "thing": (
        "request", "renewal", "invoice", "refund", "shipment", "contract", "escalation",
        "exception", "discount", "deadline", "handover", "approval", "credit note", "quote",
        "complaint", "order", "incident", "review", "budget line", "purchase order",
    ),
    "verb": (
        "confirm", "check", "record", "flag", "escalate", "summarise", "quote", "log",
        "verify", "draft", "hold", "route", "schedule", "close", "reopen", "cross-check",
    ),
    "adj": (
        "overdue", "urgent", "disputed", "unusual", "partial", "late", "duplicate", "open",
        "pending", "blocked", "high-value", "recurring", "first", "cancelled", "reduced",
    ),
    "where": (
        "in the shared tracker", "on the card", "in the weekly digest", "in the ledger",
        "in the thread", "with the owner", "in the handover note", "before the cut-off",
        "in writing", "in the customer's own words", "from the table below", "by end of day",
    ),
    "when": (
        "within one working day", "before Friday", "by the next review", "the same day",
        "within two hours", "before the end of the month", "at the next stand-up",
        "before anything is promised", "once the owner agrees", "after the second reminder",
    ),
}  # fmt: skip
_SENTENCES = (
    "When {subject} raises a {thing} marked {adj}, {verb} it {where} {when}.",
    "Never {verb} any {thing} that is {adj} without asking {subject} first.",
    "Always {verb} the {thing} {where}, and say plainly what happens next.",
    "If the {thing} is {adj}, {verb} it {when} and tell {subject} {where}.",
    "Quote figures for any {thing} only {where}; do not estimate them from memory.",
    "Any {adj} {thing} goes to {subject}: {verb} it {when}, then {verb} the outcome {where}.",
    "Keep each answer about the {thing} to three sentences unless {subject} asks for more.",
    "Do not mention another customer's {thing}; {verb} only what belongs to this room.",
    "For every {adj} {thing}, {verb} the reason {where} so the next person can follow it.",
    "Ask one clear question when the {thing} is unclear, rather than guessing {where}.",
    "{subject} decides on any {adj} {thing}; you {verb} it and report back {when}.",
    "Before you {verb} the {thing}, check that it is not already {adj} {where}.",
)
_NAMES = (
    "Ada", "Bram", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena",
    "Milo", "Nora", "Omar", "Pia", "Quinn", "Rosa", "Sami", "Tess", "Uma", "Vik", "Wren", "Yara",
)  # fmt: skip
_STATUSES = ("open", "pending", "in review", "waiting", "done", "blocked", "scheduled")


def _prose(rng: random.Random, low: int, high: int) -> str:
    """Instructions of about `low` to `high` characters, in paragraphs of whole sentences."""
    target = rng.randint(low, high)
    paragraphs: list[str] = []
    sentences: list[str] = []
    size = 0
    while size < target:
        words = {key: rng.choice(options) for key, options in _WORDS.items()}
        sentence = rng.choice(_SENTENCES).format(**words)
        sentences.append(sentence[0].upper() + sentence[1:])
        size += len(sentence) + 1
        if len(sentences) >= rng.randint(3, 5):
            paragraphs.append(" ".join(sentences))
            sentences = []
    if sentences:
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(textwrap.fill(p, 90) for p in paragraphs)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(slots=True)
class _Sql:
    """`state/*.sql` being written: one table and one view over it per call."""

    rng: random.Random
    parts: list[str] = field(default_factory=list)

    def view(self, name: str, rows: int, key: FeatureShape | None = None) -> None:
        """A table of `rows` rows and the view `name` over it; keyed by `key`'s entity."""
        rng = self.rng
        columns = ["row_id", *([key.key] if key else []), "title", "owner", "status"]
        columns += ["due_on", "amount", "note"]
        values = []
        for n in range(rows):
            cells = [_quote(f"{name[:3]}-{n + 1:04d}")]
            if key is not None:
                # Rows go round the entities: a card has one row each, a longer view several.
                entity = n % key.entities + 1
                cells.append(_quote(f"{key.prefix}-{entity:03d}"))
            pick = {k: rng.choice(v) for k, v in _WORDS.items()}
            note = f"{pick['verb']} {pick['where']}" if rng.random() < 0.7 else None
            cells += [
                _quote(f"{pick['adj']} {pick['thing']}"),
                _quote(rng.choice(_NAMES)),
                _quote(rng.choice(_STATUSES)),
                _quote(f"2025-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}"),
                f"{rng.randint(50, 25000)}.00",
                _quote(note) if note else "NULL",
            ]
            values.append("(" + ", ".join(cells) + ", 1)")
        typed = [f"{c} {'NUMERIC' if c == 'amount' else 'TEXT'}" for c in columns]
        shown = ", ".join(columns[1:])
        self.parts += [
            f"CREATE TABLE t_{name} ({', '.join(typed)}, active INTEGER NOT NULL);",
            f"INSERT INTO t_{name} VALUES\n    " + ",\n    ".join(values) + ";",
            f"CREATE VIEW {name} AS SELECT {shown} FROM t_{name} WHERE active = 1;",
        ]


def _write(path: Path, front: dict[str, str], body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A description is free text: quoted as JSON, which YAML reads as a string.
    quoted = {k: json.dumps(v) if k == "description" else v for k, v in front.items()}
    lines = "\n".join(f"{key}: {value}" for key, value in quoted.items())
    path.write_text(f"---\n{lines}\n---\n{body}\n", encoding="utf-8")


def _data(*views: str, by: str | None = None) -> str:
    if by is None:
        return "[" + ", ".join(views) + "]"
    return "[" + ", ".join(f"{{ view: {v}, by: {by} }}" for v in views) + "]"


def _feature(
    root: Path, shape: FeatureShape, rng: random.Random, sql: _Sql, agent: str
) -> tuple[list[str], list[str]]:
    """Write one feature; return the contexts its own role admits, and any reader's."""
    f, noun, key = shape.name, shape.noun, shape.key
    base = root / "features" / f
    title = f.capitalize()
    _write(base / "FEATURE.md", {"enabled": "true", "title": title}, "")
    keyed = {"entity": f"{noun} id"}
    own: list[str] = []
    read: list[str] = [f"{f}-{noun}", *(f"{f}-{t}" for t in shape.topics), f"{f}-policy"]

    card, history = f"{f}_{noun}_card", f"{f}_{noun}_history"
    sql.view(card, shape.entities, shape)
    sql.view(history, rng.randint(20, 200), shape)
    about = f"One {noun}: its card and history, and how to handle it. Not for other {noun}s."
    front = {"description": about, **keyed, "when": "[chat, ask]" if shape.chat else "[ask]"}
    front["data"] = _data(card, history, by=key)
    _write(base / f"{f}-{noun}.context.md", front, _prose(rng, 500, 3000))
    for topic in shape.topics:
        view = f"{f}_{topic.replace('-', '_')}"
        sql.view(view, rng.randint(20, 200))
        about = f"{title} {topic.replace('-', ' ')}: the rules and the current list."
        about += f" Not for one {noun}."
        front = {"description": about, "when": "[ask]", "data": _data(view)}
        _write(base / f"{f}-{topic}.context.md", front, _prose(rng, 500, 3000))
    about = f"{title} policy: what may be promised, who approves, the exceptions."
    front = {"description": f"{about} Not for day-to-day status.", "when": "[ask]"}
    _write(base / f"{f}-policy.context.md", front, _prose(rng, 1500, 3000))
    if shape.always:
        view = f"{f}_{shape.always}"
        sql.view(view, rng.randint(8, 20))
        about = f"Today's {f} {shape.always}."
        front = {"description": about, "when": "[always]", "data": _data(view)}
        _write(base / f"{f}-{shape.always}.context.md", front, _prose(rng, 500, 900))
        own.append(f"{f}-{shape.always}")

    # daily/: a heartbeat, the digest its runs read, a keyed reply context for its post.
    digest, followups = f"{f}_digest", f"{f}_{noun}_followups"
    sql.view(digest, rng.randint(20, 200))
    sql.view(followups, rng.randint(20, 200), shape)
    daily = base / "daily"
    front = {"when": "[run]", "data": _data(digest)}
    _write(daily / f"{f}-digest.context.md", front, _prose(rng, 500, 3000))
    front = {**keyed, "when": "[reply]", "data": _data(followups, by=key)}
    _write(daily / f"{f}-followup.context.md", front, _prose(rng, 500, 3000))
    front = {"description": f"The daily {f} pass.", "schedule": '"0 8 * * 1-5"', "agent": agent}
    prompt = f"Post the one {noun} that needs the owner most, with about: {{ entity: '<id>' }}."
    _write(daily / f"{f}-daily.heartbeat.md", front, prompt)

    # intake/: a scenario keyed to one entity, its cases and its playbook.
    cases = f"{f}_{noun}_cases"
    sql.view(cases, rng.randint(20, 200), shape)
    intake = base / "intake"
    front = {**keyed, "when": "[run, reply]", "data": _data(cases, by=key)}
    _write(intake / f"{f}-case.context.md", front, _prose(rng, 500, 3000))
    _write(intake / f"{f}-playbook.context.md", {"when": "[run]"}, _prose(rng, 500, 3000))
    front = {"description": f"Take in a new {noun}.", "agent": agent}
    prompt = f"Take in the new {noun}: read its cases, draft the first message, send it."
    _write(intake / f"{f}-intake.scenario.md", front, prompt)
    own += [f"{f}-followup", f"{f}-case"]
    return own, read


def generate_brain(root: Path, seed: int = 20250414) -> Path:
    """Write the deployment-shaped brain into `root` (the same seed writes the same bytes).

    8 features of 9–10 contexts each (a keyed entity context, three `ask` topics and an
    `ask` policy, a `run` digest and a keyed `reply` follow-up beside a heartbeat, a keyed
    `run`/`reply` case and a `run` playbook beside a scenario, and in three features a
    small `always` context); instructions of 0.5–3 KB (the `always` ones 0.5–0.9 KB);
    views of 20–200 rows (a card: one row per entity, 24–80 entities). Five roles admit
    17–20 contexts each: every context of their own features a role may list, and the
    entity, topic and policy contexts of the features they also read.
    """
    rng = random.Random(seed)
    sql = _Sql(rng)
    admitted: dict[str, list[str]] = {r.name: [] for r in ROLES}
    for shape in FEATURES:
        agent = next(r.name for r in ROLES if shape.name in r.primary)
        own, read = _feature(root, shape, rng, sql, agent)
        for role in ROLES:
            if shape.name in role.primary:
                admitted[role.name] += own + read
            elif shape.name in role.secondary:
                admitted[role.name] += read
    for role in ROLES:
        home = root / "features" / role.primary[0]
        inbox = f"{role.name.replace('-', '_')}_inbox"
        sql.view(inbox, rng.randint(8, 15))
        skill = f"{role.name}-style"
        front = {"description": f"How the {role.name} writes."}
        _write(home / f"{skill}.skill.md", front, _prose(rng, 250, 450))
        front = {
            "description": f"The {role.name.replace('-', ' ')} of the company.",
            "contexts": "[" + ", ".join(admitted[role.name]) + "]",
            "capabilities": "[context:read, context:bind]",
            "skills": f"[{skill}]",
            "state": f"[{inbox}]",
        }
        _write(home / f"{role.name}.agent.md", front, _prose(rng, 400, 700))
    (root / "state").mkdir(parents=True, exist_ok=True)
    (root / "state" / "001_generated.sql").write_text("\n\n".join(sql.parts) + "\n")
    (root / "constitution").mkdir(parents=True, exist_ok=True)
    (root / "constitution" / "MANIFEST.yaml").write_text(MANIFEST)
    (root / "constitution" / "access.yaml").write_text(_access())
    return root


MANIFEST = f"""\
name: generated
contexts:
  chars: 6000          # instructions run to 3 KB: a block needs room for its views too
  maxActive: 4
  turnChars: 18000
  keep: 3
state:
  rows: {STATE_ROWS}
model: {{ name: any-model, window: 200000, output_reserve: 8000, input_allocation: 150000 }}
sections: {{ history: 4000, prompt: 2000, context: 2000, context.catalog: 1500 }}
"""


def _access() -> str:
    lines = ["bots:"]
    for role in ROLES:
        lines += [f"  {role.bot}:", f"    default: {{ role: {role.name} }}"]
        lines += [f"    dm: {{ role: {role.name} }}", "    chats:"]
        rule = f"role: {role.name}"
        if role.name == "account-manager":
            for chat, acc in ACCOUNT_GROUPS.items():
                lines.append(f'      "{chat}": {{ {rule}, contexts: {{ crm-account: {acc} }} }}')
        if role.name == "ops-lead":
            for chat, site in SITE_GROUPS.items():
                lines.append(f'      "{chat}": {{ {rule}, contexts: {{ ops-site: {site} }} }}')
            lines.append(f'      "{STAFF_GROUP}": {{ {rule}, title: Staff }}')
        if role.name == "support-agent":
            lines.append(f'      "{SUPPORT_FORUM}": {{ {rule}, title: Support forum }}')
        if lines[-1] == "    chats:":
            lines.pop()
    return "\n".join(lines) + "\n"


_ANSWERS = (
    "Done — noted, and I'll follow up today.",
    "Here is where it stands; the next step is mine, by Friday.",
    "Confirmed. Details follow in this thread.",
    "Thanks — logged, and the owner is in the loop.",
    "Short answer: yes, within the usual terms.",
)


def generated_workload(root: Path, seed: int = 20250414) -> Workload:
    """61 turns on the generated brain; most link one to three contexts."""
    rng = random.Random(seed + 1)

    def reply() -> str:
        return rng.choice(_ANSWERS)

    scripts: list[list[Step]] = []
    # Account groups, bound to their account in access.yaml (chat), with opens.
    for n, (chat, acc) in enumerate(ACCOUNT_GROUPS.items()):
        room = Room(f"group {acc}", "hq", chat)
        script: list[Step] = [
            room.say(f"Where are we with the renewal for {acc}?", reply()),
            room.say("Two-year term price?", reply(), note="open", open=_o("crm-pricing")),
            room.say("And with the volume discount?", reply(), note="kept link"),
        ]
        if n == 0:
            other = _o("crm-account=acc-011")
            script.append(
                room.say("What does acc-011 pay?", "Not here.", note="refused", open=other)
            )
        if n == 1:
            campaign = _o("marketing-campaign=cmp-007")
            script.append(room.say("Our campaign?", reply(), note="open", open=campaign))
        scripts.append(script)
    # Ops site groups, bound to their site; the staff group opens people contexts.
    for chat, site in SITE_GROUPS.items():
        room = Room(f"group {site}", "ops", chat)
        scripts.append(
            [room.say("Is the forklift inspection done?", reply()), room.say("Rota?", reply())]
        )
    staff = Room("staff group", "ops", STAFF_GROUP)
    scripts.append(
        [
            staff.say("Leave days of emp-012?", reply(), note="open", open=_o("people-leave")),
            staff.say("Can she carry them over?", reply(), note="kept link"),
            staff.say("emp-031 start?", reply(), note="open", open=_o("people-employee=emp-031")),
        ]
    )
    # Support forum: an intake run per ticket, then its topic bound to the ticket.
    for ticket, thread in (("T-004", "topic-4"), ("T-019", "topic-19")):
        topic = Room(f"forum {ticket}", "desk", SUPPORT_FORUM, thread=thread)
        intake = "scenario:support-intake"
        scripts.append(
            [
                topic.run(intake, entity=ticket),
                topic.bind("support-ticket", ticket),
                topic.send(intake, f"in-{ticket}", f"{ticket} is open.", entity=ticket),
                topic.say("It still fails after the update.", reply()),
                topic.say("Any news?", reply(), note="reply", reply_to=f"in-{ticket}"),
                topic.say("Refund?", reply(), note="open", open=_o("support-macros")),
            ]
        )
    # Heartbeats: a run, a post keyed with about: {entity}, a reply, follow-ups within keep.
    for feature, bot, key in (
        ("crm", "hq", "acc-021"),
        ("billing", "ledger", "inv-014"),
        ("logistics", "desk", "shp-033"),
        ("ops", "ops", "site-012"),
        ("marketing", "buzz", "cmp-005"),
    ):
        beat = Room(feature, bot, f"tg:user:70{len(scripts):02d}")
        owner = Room(feature, bot, beat.chat, dm=True)
        run = f"heartbeat:{feature}-daily"
        scripts.append(
            [
                beat.run(run),
                beat.send(run, f"daily-{feature}", f"Look at {key} today.", about=key),
                owner.say(f"Story of {key}?", reply(), note="reply", reply_to=f"daily-{feature}"),
                owner.say("OK, chase it today.", reply(), note="kept link"),
                owner.say("Anything else on it?", reply(), note="kept link"),
            ]
        )
    # Scenarios keyed to one entity, a reply to their post, an open in the same DM.
    for feature, bot, key, topic_id in (
        ("legal", "ledger", "ctr-009", "legal-ndas"),
        ("people", "ops", "emp-020", "people-onboarding"),
        ("billing", "ledger", "inv-041", "billing-vat"),
    ):
        chat = f"tg:user:70{len(scripts):02d}"
        runner, owner = Room(feature, bot, chat), Room(feature, bot, chat, dm=True)
        run = f"scenario:{feature}-intake"
        scripts.append(
            [
                runner.run(run, entity=key),
                runner.send(run, f"intake-{key}", f"Draft ready for {key}.", entity=key),
                owner.say("Yes, but softer.", reply(), note="reply", reply_to=f"intake-{key}"),
                owner.say("The rules again?", reply(), note="open", open=_o(topic_id)),
                owner.say("Thanks, that's all.", reply(), note="after"),
            ]
        )
    return Workload(
        name="generated",
        about="a generated brain shaped like a deployment (8 features, 5 roles)",
        root=root,
        steps=interleave(scripts, seed),
    )
