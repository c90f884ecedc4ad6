"""A deterministic synthetic brain for benchmarks.

`generate(root, Shape(...))` writes a brain of any size into `root`: features with nested
directories, contexts (keyed and not, with views whole and `by` a column), roles with
allowlists and budgets, heartbeats, hooks and scenarios (some with an explicit `reach:`),
a MANIFEST, an access.yaml binding group chats to keyed contexts, and `state/*.sql`
creating every view the contexts name. The same shape and seed always write the same bytes,
so runs on different days measure the same work.

Other benchmarks import it (the bench directory is on `sys.path` when a script in it runs):

    from generate import Shape, generate
    made = generate(tmp / "brain", Shape(contexts=10_000, roles=500, entities=2_000))
    made.contexts[0], made.roles[0], made.entities[0], made.chats[0]
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

WORDS = (  # noqa: SIM905 - a word list reads better as one block of text
    "account answer approval archive balance batch billing brief budget calendar call "
    "campaign card case change channel charge check client close coach contract credit "
    "customer deadline delivery desk digest draft email escalate estimate event export "
    "feedback film follow forecast form goal handoff invoice issue journal lead ledger "
    "lesson limit list meeting memo milestone note offer order outreach owner partner "
    "payment pipeline plan policy priority project prospect quote rate receipt refund "
    "reminder renewal report request review risk routine schedule score shipment signal "
    "status summary supplier survey task team ticket timeline topic trial update vendor"
).split()
AREAS = (  # noqa: SIM905 - as above
    "support billing coach outreach returns sales ops finance people legal growth "
    "research design infra security content events partners training quality"
).split()
SUBDIRS = (  # noqa: SIM905 - as above
    "morning evening weekly intake triage followup review archive escalation onboarding "
    "renewals reports daily monthly vip trials"
).split()
CAPABILITIES = ("context:read", "context:bind", "notify:send", "state:read", "hitl:request")
WHENS = (
    ("run", "ask"),
    ("run", "reply"),
    ("chat", "ask"),
    ("run", "reply", "ask"),
    ("ask",),
    ("always",),
    ("reply",),
    ("run",),
)
EVENTS = ("ticket.opened", "invoice.overdue", "order.shipped", "lead.created", "form.sent")
CRONS = ("0 9 * * *", "30 7 * * 1-5", "0 19 * * *", "*/15 * * * *", "0 8 1 * *")


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """How big a brain to write. `features=0` picks one feature per 50 contexts."""

    contexts: int = 10_000
    roles: int = 500
    entities: int = 2_000
    features: int = 0
    seed: int = 7


@dataclass(frozen=True, slots=True, kw_only=True)
class Generated:
    """What was written, so a benchmark can pick real ids to drive turns with."""

    root: Path
    files: int
    features: tuple[str, ...]
    contexts: tuple[str, ...]
    keyed_contexts: tuple[str, ...]
    roles: tuple[str, ...]
    entities: tuple[str, ...]  # "kind:id", the way a run names what it runs
    chats: tuple[tuple[str, str], ...]  # (bot, chat id) of every group rule
    views: tuple[str, ...]


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self._made: set[Path] = set()

    def write(self, rel: str, text: str) -> None:
        target = self.root / rel
        if target.parent not in self._made:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._made.add(target.parent)
        target.write_text(text, encoding="utf-8")
        self.count += 1


def _prose(rng: random.Random, chars: int) -> str:
    """Sentences of plain words, wrapped at 88 columns, about `chars` long."""
    lines: list[str] = []
    line: list[str] = []
    size = width = 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))
        for word in (sentence[:1].upper() + sentence[1:] + ".").split():
            if width + len(word) + 1 > 88:
                lines.append(" ".join(line))
                line, width = [], 0
            line.append(word)
            width += len(word) + 1
            size += len(word) + 1
    lines.append(" ".join(line))
    return "\n".join(lines) + "\n"


def _line(rng: random.Random, chars: int) -> str:
    """One line of prose (a frontmatter description), about `chars` long."""
    return " ".join(_prose(rng, chars).split())


def _flow(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _dirs(rng: random.Random) -> list[tuple[str, ...]]:
    """A feature's directories: its root plus a few parts, some of them two or three deep."""
    found: list[tuple[str, ...]] = [()]
    for top in rng.sample(SUBDIRS, rng.randint(1, 4)):
        found.append((top,))
        for sub in rng.sample(SUBDIRS, rng.randint(0, 2)):
            found.append((top, sub))
            if rng.random() < 0.3:
                found.append((top, sub, rng.choice(SUBDIRS)))
    return found


def _spread(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def generate(root: Path, shape: Shape) -> Generated:
    """Write a brain of `shape` into `root` (created if missing) and say what it holds."""
    rng = random.Random(shape.seed)
    out = _Writer(root)
    feature_count = shape.features or max(1, shape.contexts // 50)
    features = [f"{AREAS[i % len(AREAS)]}_{i:03d}" for i in range(feature_count)]
    contexts: list[str] = []
    keyed: list[str] = []
    roles: list[str] = []
    entities: list[str] = []
    views: list[str] = []
    sql: list[str] = []
    per_context = _spread(shape.contexts, feature_count)
    per_role = _spread(shape.roles, feature_count)
    per_entity = _spread(shape.entities, feature_count)

    for index, feature in enumerate(features):
        base = f"features/{feature}"
        dirs = _dirs(rng)
        queue, card = f"{feature}_queue", f"{feature}_card"
        views += [queue, card]
        sql.append(_feature_sql(rng, feature, queue, card))
        out.write(
            f"{base}/FEATURE.md",
            f"---\nenabled: true\ntitle: {feature.replace('_', ' ').title()}\n"
            f"description: {_line(rng, 60)}\n---\n",
        )
        mine: list[str] = []
        for _ in range(per_context[index]):
            ident = f"{rng.choice(WORDS)}-{len(contexts):05d}"
            where = "/".join((base, *rng.choice(dirs)))
            is_keyed = rng.random() < 0.4
            out.write(f"{where}/{ident}.context.md", _context(rng, queue, card, is_keyed))
            contexts.append(ident)
            mine.append(ident)
            if is_keyed:
                keyed.append(ident)
        for _ in range(per_role[index]):
            ident = f"{feature.split('_')[0]}-desk-{len(roles):04d}"
            out.write(f"{base}/{ident}.agent.md", _role(rng, mine, queue))
            roles.append(ident)
        for _ in range(per_entity[index]):
            kind = ("heartbeat", "hook", "scenario")[len(entities) % 3]
            ident = f"{kind[:4]}-{len(entities):05d}"
            where = "/".join((base, *rng.choice(dirs)))
            agent = roles[-1] if roles else None
            out.write(f"{where}/{ident}.{kind}.md", _entity(rng, kind, agent, mine))
            entities.append(f"{kind}:{ident}")

    chats = _constitution(out, rng, roles, keyed)
    out.write("state/001_views.sql", "\n".join(sql))
    return Generated(
        root=root,
        files=out.count,
        features=tuple(features),
        contexts=tuple(contexts),
        keyed_contexts=tuple(keyed),
        roles=tuple(roles),
        entities=tuple(entities),
        chats=chats,
        views=tuple(views),
    )


def _context(rng: random.Random, queue: str, card: str, keyed: bool) -> str:
    front = [f"description: {_line(rng, rng.randint(50, 110))}"]
    if keyed:
        front.append(f"entity: {rng.choice(WORDS)} id")
    front.append(f"when: {_flow(list(rng.choice(WHENS)))}")
    if keyed:
        front += ["data:", f"  - {queue}", f"  - {{ view: {card}, by: entity_id }}"]
    elif rng.random() < 0.5:
        front.append(f"data: [{queue}]")
    if rng.random() < 0.3:
        front.append(f"chars: {rng.choice((1500, 2000, 3000, 4000))}")
    if rng.random() < 0.2:
        front.append(f"keep: {rng.randint(0, 5)}")
    body = _prose(rng, rng.randint(300, 1500))
    return "---\n" + "\n".join(front) + "\n---\n" + body


def _role(rng: random.Random, mine: list[str], queue: str) -> str:
    admitted = ["'*'"] if rng.random() < 0.05 else rng.sample(mine, min(len(mine), 8))
    caps = rng.sample(CAPABILITIES, rng.randint(1, 3))
    front = [
        f"description: {_line(rng, 70)}",
        f"contexts: {_flow(admitted)}",
        f"capabilities: {_flow(caps)}",
        f"state: [{queue}]",
        f"contexts_budget: {{ maxActive: {rng.randint(2, 5)}, turnChars: 12000 }}",
        f"sections: {{ history: {rng.choice((2000, 3000, 4000))}, render.{queue}: 600 }}",
    ]
    if rng.random() < 0.2:
        front.append("model: { name: any-model, window: 200000, output_reserve: 8000 }")
    return "---\n" + "\n".join(front) + "\n---\n" + _prose(rng, rng.randint(600, 2500))


def _entity(rng: random.Random, kind: str, agent: str | None, mine: list[str]) -> str:
    front = [f"description: {_line(rng, 60)}"]
    if agent is not None:
        front.append(f"agent: {agent}")
    if kind == "heartbeat":
        front.append(f"schedule: '{rng.choice(CRONS)}'")
    elif kind == "hook":
        front.append(f"event: {rng.choice(EVENTS)}")
    if mine and rng.random() < 0.1:
        front.append(f"reach: {_flow(rng.sample(mine, min(len(mine), 2)))}")
    return "---\n" + "\n".join(front) + "\n---\n" + _prose(rng, rng.randint(150, 700))


def _feature_sql(rng: random.Random, feature: str, queue: str, card: str) -> str:
    table = f"{feature}_items"
    rows = ",\n".join(
        f"  ('e-{n:03d}', '{rng.choice(WORDS)} {rng.choice(WORDS)}', "
        f"'{rng.choice(('open', 'waiting', 'done'))}', '2025-01-{n + 1:02d}')"
        for n in range(5)
    )
    return (
        f"CREATE TABLE {table} (entity_id TEXT, title TEXT, status TEXT, updated TEXT);\n"
        f"INSERT INTO {table} VALUES\n{rows};\n"
        f"CREATE VIEW {queue} AS SELECT entity_id, title, status FROM {table} "
        "WHERE status != 'done';\n"
        f"CREATE VIEW {card} AS SELECT * FROM {table};\n"
    )


def _constitution(
    out: _Writer, rng: random.Random, roles: list[str], keyed: list[str]
) -> tuple[tuple[str, str], ...]:
    out.write(
        "constitution/MANIFEST.yaml",
        "name: synthetic\n"
        "contexts: { chars: 3000, maxActive: 3, turnChars: 12000, keep: 3, "
        "codeTimeoutMs: 2000 }\n"
        "state: { rows: 20 }\n"
        "messageOrigins: { retentionDays: 365 }\n"
        "contentProbe: { context: 2 }\n"
        "model: { name: any-model, window: 200000, output_reserve: 8000, "
        "input_allocation: 150000 }\n"
        "sections: { history: 4000, prompt: 2000, context.catalog: 600 }\n",
    )
    lines = ["bots:"]
    chats: list[tuple[str, str]] = []
    bots = ("nova", "desk", "tutor", "largo", "orbit")
    for number, bot in enumerate(bots):
        lines.append(f"  {bot}:")
        if roles:
            lines.append(f"    default: {{ role: {rng.choice(roles)} }}")
            lines.append(f"    dm: {{ role: {rng.choice(roles)} }}")
        lines.append("    chats:")
        for n in range(max(1, len(roles) // 10)):
            chat = f"tg:chat:-100{number + 1}{n:09d}"
            lines.append(f'      "{chat}":')
            if roles:
                lines.append(f"        role: {rng.choice(roles)}")
            lines.append(f"        title: {rng.choice(WORDS).title()} {n}")
            if keyed and n % 2 == 0:
                lines.append(f"        contexts: {{ {rng.choice(keyed)}: key-{n:04d} }}")
            chats.append((bot, chat))
    if len(lines) == 1:
        lines[0] = "bots: {}"
    out.write("constitution/access.yaml", "\n".join(lines) + "\n")
    return tuple(chats)
