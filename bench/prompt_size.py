"""What Keel sends, against what the same turns cost with every context in the role.

    uv run python bench/prompt_size.py [--json PATH] [--tmpdir DIR]

Keel exists so that a turn pays only for what is linked to it. This benchmark plays two
workloads (bench/prompt_workloads.py) through Keel exactly as `keel turn` / `keel send` /
`keel bind` do — each turn prepared and assembled (`prepare_and_assemble`, exact o200k as
the counter), each run's post recorded with its origin, each binding stored — on a fresh
SQLite database per workload, and measures every turn's model input against a baseline:

- reference: the reference brain (examples/brain) over 55 turns covering every link kind
  (run, chat, reply, code, ask, always), refusals in a pinned room and each worked example;
- generated: a brain written into a temporary directory, shaped like a deployment
  (8 features, 75 contexts of 0.5–3 KB with views of 20–200 rows, 5 roles admitting 17–20
  contexts each), over 61 turns that mostly link one to three contexts.

Turns are prepared as an API agent's (no CLI session, so the largo role gets every block
whole, as `keel turn` without `--session` does). After each turn the bot's short answer is
recorded as a send with no run, so history grows as in a chat; it is the same on both
sides. Brain code is the host's to run before a turn (a context's match, a hook's gate):
the workload states what it answers (`attach`, `reach`).

**The baseline** is the role a brain author would have written before feature contexts:
the role's prompt holds, after its persona and skills, every context that can reach the
role — the contexts its `contexts:` admits (`'*'`: all), the run contexts of the runs it
is the agent of, and those access.yaml binds in its rooms (19–24 a role on the generated
brain, 1–4 on the reference brain) — each as its instructions and its views' rows for
EVERY entity: the whole view, unfiltered. A role that must answer about any client or
ticket has to hold every one's rows; `--baseline-rows capped` shows the same baseline
with each view cut at `state.rows` instead (a role that could then not see most
entities), for comparison. It keeps the
same time line, role state views, history and input as Keel's turn, and drops everything
that is Keel's own: the identity and tenancy lines, the rules section, the catalog, the
feature-context blocks and stubs, and Keel's tools (`context_open`, `context_bind`,
`context_unbind`: without feature contexts there is nothing to open or bind).

**Measured** per turn, per role and in total: characters and exact o200k tokens of the
request (each message's text + 4 per message + 3, plus the tool definitions as Keel
measures them), and the billed input with a provider's prompt cache. The stable prefix is
the system text plus the tool definitions, the same on every turn of a role (Keel's
`system_text` and tools); for the baseline it is its whole system prompt, persona, skills
and every context's text: its view rows change when the data does, but within the
benchmark they do not, so it is treated as cacheable. A prefix is billed at the cached
rate from its second use on (Anthropic's cache read 0.1×, OpenAI's 0.5×), its first use
at 1.25× for Anthropic (a cache write) and 1× for OpenAI; everything after it at 1×. The
cache is keyed by the prefix's exact text, so in effect once per role (and bot). Providers
only cache a prefix of at least 1,024 tokens: the totals also show the bill under that
rule. Cache expiry (5 minutes by default) is ignored: the workload is taken as dense.

**Targets** (printed MET / MISSED; the exit code is 0 either way):
the reference workload in total ≤ 100 % of the baseline's tokens and no turn more than
the baseline + 150 tokens; the generated brain ≤ 20 % of the baseline's tokens and ≤ 15 %
of its billed input with caching (Anthropic's rates).

Exact counts use `toktok` when it is importable, else tiktoken with the rank file at
../shared/data/o200k_base.tiktoken: this benchmark may read ../shared (beside the
repository), and reads nothing else outside it. It writes only in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, cast

import keel
from keel.errors import Refused
from keel.tokens import TiktokenCounter, ToktokCounter
from prompt_workloads import (
    Bind,
    Entry,
    Send,
    Turn,
    Workload,
    generate_brain,
    generated_workload,
    reference_workload,
)

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KEEL_SHARED") or REPO.parent / "shared")
RANKS = SHARED / "data" / "o200k_base.tiktoken"
START = datetime(2025, 4, 14, 8, 0, tzinfo=UTC)
STEP = timedelta(minutes=3)
MESSAGE_FRAME, PRIMING = 4, 3  # o200k chat accounting: per message, per request
CACHE_MINIMUM = 1024  # the shortest prefix Anthropic and OpenAI cache
Place = Literal["system", "state", "tool", "history", "tail"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One piece of a request: what it is (`kind`), where it goes, its text."""

    kind: str
    place: Place
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One turn's model input as Keel assembled it, in plain values."""

    role: str
    system: str  # the stable system text (the prompt-cache prefix, with the tools)
    state: str  # system text that changes per turn (time, tenancy, role state)
    history: tuple[str, ...]
    tail: str  # the last user message: attached contexts, stubs, then the input
    tools: tuple[str, ...]  # each tool definition as Keel measures it
    parts: tuple[Part, ...]
    carried: tuple[str, ...]  # "context@entity:link"
    stubbed: tuple[str, ...]
    refused: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextDoc:
    feature: str
    id: str
    instructions: str
    views: tuple[str, ...]  # each carried whole in the baseline


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleDoc:
    """What the baseline puts in a role: persona, skills, every context that reaches it."""

    id: str
    persona: str
    skills: tuple[str, ...]
    contexts: tuple[ContextDoc, ...]


# ---------------------------------------------------------------------------------------
# Adapter: every use of Keel's API is in this section.


def exact_counter() -> tuple[Any, str]:
    """o200k exactly: toktok if importable, else tiktoken on ../shared's rank file."""
    try:
        return ToktokCounter.load("o200k_base"), "o200k_base (toktok)"
    except keel.KeelError:  # toktok is not installed
        counter = TiktokenCounter.from_file(RANKS, "o200k_base")
        return counter, f"o200k_base (tiktoken, {RANKS})"


@dataclass(slots=True, kw_only=True)
class Opened:
    engine: keel.Engine
    db: Path

    @property
    def brain(self) -> keel.Brain:
        return self.engine.brain

    @property
    def rows(self) -> int:
        """state.rows: the rows one view shows."""
        return self.brain.manifest.state_rows


@contextmanager
def open_brain(root: Path, db: Path, counter: Any) -> Iterator[Opened]:
    """The brain's engine on a fresh SQLite file (state/*.sql applied), no file watcher."""
    # A refused link is logged for operators; here the report shows it (`!context`).
    logging.getLogger("keel").addHandler(logging.NullHandler())
    logging.getLogger("keel").propagate = False
    with keel.Engine(root, f"sqlite:///{db.as_posix()}", counter=counter, watch=False) as engine:
        engine.store.migrate()  # the file exists, with its state, before the baseline reads it
        yield Opened(engine=engine, db=db)


def _entries(entries: Sequence[Entry] | None) -> tuple[keel.ReachEntry, ...] | None:
    if entries is None:
        return None
    return tuple(keel.ReachEntry(context=c, entity=e) for c, e in entries)


def _run(text: str | None) -> keel.RunRef | None:
    if text is None:
        return None
    kind, _, ident = text.partition(":")
    return keel.RunRef(kind=cast(Any, kind), id=ident)  # Keel checks the kind


# Section ids → the kinds this benchmark reports; `context.*` are blocks or stubs.
_KINDS = {"sys.time": "time", "identity": "identity", "tenancy": "tenancy", "rules": "rules"}
_KINDS |= {"prompt": "persona", "context.catalog": "catalog", "current": "input"}
_FAMILIES = {"skill": "skills", "tool": "tools", "render": "role state", "history": "history"}
_MARKUP = re.compile(r"</?(?:context|context-stub|view)\b[^>]*>\n?")


def _kind(section_id: str, text: str) -> str:
    if section_id in _KINDS:
        return _KINDS[section_id]
    family = section_id.split(".", 1)[0]
    if family == "context":
        return "stub" if text.startswith("<context-stub") else "context"
    return _FAMILIES[family]


def block_content(text: str) -> str:
    """A `<context>` block without its tags: the context's own text."""
    return _MARKUP.sub("", text)


def take_turn(opened: Opened, turn: Turn, now: datetime) -> Sent:
    """Prepare and assemble one turn as `keel turn` does (no CLI session)."""
    request = keel.TurnRequest(
        conversation=keel.Conversation(bot=turn.bot, chat=turn.chat, thread=turn.thread),
        now=now,
        role=turn.role,
        dm=turn.dm,
        input=turn.input,
        reply_to=turn.reply_to,
        run=_run(turn.run),
        entity=turn.entity,
        reach=_entries(turn.reach),
        attach=_entries(turn.attach) or (),
        open=_entries(turn.open) or (),
    )
    prepared, assembly = opened.engine.prepare(request)
    parts: list[Part] = []
    for section in assembly.sections:
        if section.id == "history":
            parts += [Part(kind="history", place="history", text=m.text) for m in section.messages]
        elif section.text:
            parts.append(
                Part(kind=_kind(section.id, section.text), place=section.place, text=section.text)
            )
    tools = tuple(s.text for s in assembly.sections if s.place == "tool")

    def named(link: Any) -> str:
        return link.context + (f"@{link.entity}" if link.entity else "") + f":{link.kind}"

    return Sent(
        role=prepared.role,
        system=assembly.system_text,
        state=assembly.state_text,
        history=tuple(m.text for m in assembly.history if m.text),
        tail=assembly.tail_text,
        tools=tools,
        parts=tuple(parts),
        carried=tuple(named(a.link) for a in prepared.attached),
        stubbed=tuple(named(s.link) for s in prepared.stubs),
        refused=tuple(f"{r.context}@{r.entity}:{r.kind}" for r in prepared.refused),
    )


def send(opened: Opened, step: Send, now: datetime) -> str | None:
    """Record a run's post as `keel send` does; the refusal's reason, or None when sent."""
    try:
        opened.engine.send(
            keel.Conversation(bot=step.bot, chat=step.chat, thread=step.thread),
            step.text,
            message_id=step.message_id,
            at=now,
            run=_run(step.run),
            entity=step.entity,
            reach=_entries(step.reach),
            about_entity=step.about_entity,
        )
    except Refused as refusal:
        return str(refusal)
    return None


def answer(opened: Opened, turn: Turn, text: str, message_id: str, now: datetime) -> None:
    """The bot's answer to a turn, into the conversation's history (a send with no run)."""
    step = Send(
        label="", bot=turn.bot, chat=turn.chat, thread=turn.thread, text=text, message_id=message_id
    )
    refused = send(opened, step, now)
    if refused is not None:
        raise RuntimeError(f"an answer with no run was refused: {refused}")


def bind(opened: Opened, step: Bind) -> None:
    """`context_bind` as `keel bind` does, acting as the role that answers there."""
    conversation = keel.Conversation(bot=step.bot, chat=step.chat, thread=step.thread)
    role = opened.engine.role_for(
        keel.TurnRequest(conversation=conversation, now=START, dm=step.dm)
    )
    opened.engine.bind(
        context=step.context,
        entity=step.entity,
        chat=step.chat,
        thread=step.thread,
        role=role.id,
    )


def role_docs(brain: Any) -> dict[str, RoleDoc]:
    """Every role with every context that can reach it, for the baseline.

    Admitted by its `contexts:` (`'*'`: all), or a run context of a run whose agent it is
    (a run's own feature needs no allowlist), or bound by access.yaml in one of its rooms.
    """
    docs: dict[str, RoleDoc] = {}
    for role in brain.roles.values():
        listed = role.contexts or ()
        ids = set(brain.contexts) if "*" in listed else {i for i in listed if i in brain.contexts}
        for entity in brain.entities.values():
            if entity.agent == role.id:
                for entry in brain.reach_of(entity):
                    context = brain.contexts.get(entry.context)
                    if context and "run" in context.when and context.feature == entity.feature:
                        ids.add(context.id)
        for rule in brain.access.rules:
            if rule.role == role.id:
                ids |= {i for i in rule.contexts if i in brain.contexts}
        contexts = sorted((brain.contexts[i] for i in ids), key=lambda c: (c.feature, c.id))
        docs[role.id] = RoleDoc(
            id=role.id,
            persona=role.persona,
            skills=tuple(brain.skills[s].text for s in role.skills if s in brain.skills),
            contexts=tuple(
                ContextDoc(
                    feature=c.feature,
                    id=c.id,
                    instructions=c.instructions,
                    views=tuple(ref.view for ref in c.data),
                )
                for c in contexts
            ),
        )
    return docs


# ---------------------------------------------------------------------------------------
# The baseline: every context in the role's prompt, views whole


def cell(value: object) -> str:
    """A table cell as Keel writes one: on one line, no separators, no tags."""
    if value is None:
        return ""
    text = str(value)
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "").replace("|", "\\|")
    return text.replace("<", "&lt;")


def whole_view(db: sqlite3.Connection, view: str, rows: int | None) -> str:
    """The view's header and its rows, every entity's (the first `rows` when capped)."""
    quoted = '"' + view.replace('"', '""') + '"'
    cursor = db.execute(f"SELECT * FROM {quoted} LIMIT ?", (-1 if rows is None else rows,))
    columns = [d[0] for d in cursor.description]
    lines = [f"{view}:", " | ".join(columns)]
    lines += [" | ".join(cell(v) for v in row) for row in cursor.fetchall()]
    total = db.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()[0]
    if rows is not None and total > rows:
        hidden = total - rows
        lines.append(f"({hidden} more {'row' if hidden == 1 else 'rows'} not shown)")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    system: str
    parts: tuple[Part, ...]  # persona, skills, then one "context" part per context
    contexts: int


# The baseline's own labels: a context's heading, a view's name line.
_HEADING = re.compile(r"^(?:## .*|[A-Za-z0-9_]+:)\n", re.MULTILINE)


def baseline_of(doc: RoleDoc, db: sqlite3.Connection, rows: int | None) -> Baseline:
    """The role's system prompt with every context's instructions and whole views in it."""
    parts = [Part(kind="persona", place="system", text=doc.persona)]
    parts += [Part(kind="skills", place="system", text=s) for s in doc.skills if s]
    for context in doc.contexts:
        pieces = [f"## {context.feature}: {context.id}\n{context.instructions}"]
        pieces += [whole_view(db, view, rows) for view in context.views]
        parts.append(Part(kind="context", place="system", text="\n\n".join(pieces)))
    system = "\n\n".join(p.text for p in parts if p.text)
    return Baseline(system=system, parts=tuple(parts), contexts=len(doc.contexts))


def baseline_turn(base: Baseline, sent: Sent) -> Sent:
    """The same turn with the role as before feature contexts: no Keel sections or tools."""
    shared = [p for p in sent.parts if p.kind in ("time", "role state")]
    state = "\n\n".join(p.text for p in shared)
    current = [p for p in sent.parts if p.kind == "input"]
    history = [p for p in sent.parts if p.kind == "history"]
    return Sent(
        role=sent.role,
        system=base.system,
        state=state,
        history=sent.history,
        tail=current[0].text,
        tools=(),
        parts=(*base.parts, *shared, *history, *current),
        carried=(),
        stubbed=(),
        refused=(),
    )


# ---------------------------------------------------------------------------------------
# Measuring


@dataclass(slots=True, kw_only=True)
class Side:
    """One side of one turn (Keel or the baseline): its size and its bill."""

    chars: int
    tokens: int
    prefix: int  # tokens of the cacheable prefix: tools + system message
    kinds: dict[str, int]  # where the tokens go
    prefix_kinds: dict[str, int]  # the same, for the prefix alone
    warm: bool = False  # the prefix was already cached
    anthropic: float = 0.0  # billed input tokens with Anthropic's cache (write 1.25, read 0.1)
    openai: float = 0.0  # with OpenAI's (read 0.5)
    anthropic_min: float = 0.0  # the same, caching only a prefix of 1,024 tokens or more
    openai_min: float = 0.0
    billed_kinds: dict[str, float] = field(default_factory=dict)  # Anthropic's bill, by part


@dataclass(slots=True, kw_only=True)
class Row:
    index: int
    label: str
    role: str
    carried: str
    keel: Side
    base: Side


def measure(sent: Sent, count: Callable[[str], int]) -> Side:
    """Characters and o200k tokens of the request, and where its tokens go."""
    messages = [t for t in (sent.system, sent.state) if t] + list(sent.history) + [sent.tail]
    texts = [*messages, *sent.tools]
    tokens = sum(count(t) for t in texts) + MESSAGE_FRAME * len(messages) + PRIMING
    prefix = sum(count(t) for t in sent.tools)
    prefix += count(sent.system) + MESSAGE_FRAME if sent.system else 0
    kinds: Tally[str] = Tally()
    cached: Tally[str] = Tally()
    for part in sent.parts:
        used = count(part.text)
        split = {part.kind: used}
        if part.kind == "context":
            own = count(_HEADING.sub("", block_content(part.text)))
            split = {"contexts' own text": own, "block markup": used - own}
        kinds.update(split)
        if part.place in ("system", "tool"):
            cached.update(split)
    # Message frames, the reply's priming and the blank lines that join sections.
    kinds["framing"] = tokens - sum(kinds.values())
    cached["framing"] = prefix - sum(cached.values())
    return Side(
        chars=sum(map(len, texts)),
        tokens=tokens,
        prefix=prefix,
        kinds=dict(kinds),
        prefix_kinds=dict(cached),
    )


class Cache:
    """A provider's prompt cache, keyed by the prefix's exact text."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def bill(self, side: Side, key: str) -> None:
        rest, prefix, warm = side.tokens - side.prefix, side.prefix, key in self.seen
        self.seen.add(key)
        rate = 0.1 if warm else 1.25
        side.warm = warm
        side.anthropic = rest + prefix * rate
        side.openai = rest + prefix * (0.5 if warm else 1.0)
        cacheable = prefix >= CACHE_MINIMUM
        side.anthropic_min = side.anthropic if cacheable else side.tokens
        side.openai_min = side.openai if cacheable else side.tokens
        side.billed_kinds = {
            kind: used + side.prefix_kinds.get(kind, 0) * (rate - 1)
            for kind, used in side.kinds.items()
        }


def play(
    workload: Workload, tmp: Path, counter: Any, *, capped: bool
) -> tuple[list[Row], dict[str, Any]]:
    """Every step of the workload through Keel, each turn measured against its baseline."""
    count = counter.count
    rows: list[Row] = []
    links: Tally[str] = Tally()
    keel_cache, base_cache = Cache(), Cache()
    with open_brain(workload.root, tmp / f"{workload.name}.db", counter) as opened:
        docs = role_docs(opened.brain)
        reader = sqlite3.connect(opened.db)
        cap = opened.rows if capped else None
        baselines = {r: baseline_of(d, reader, cap) for r, d in docs.items()}
        reader.close()
        for i, step in enumerate(workload.steps):
            now = START + i * STEP
            if isinstance(step, Bind):
                bind(opened, step)
                continue
            if isinstance(step, Send):
                refused = send(opened, step, now)
                if (refused is not None) != step.refused:
                    raise RuntimeError(f"{workload.name}: {step.label}: {refused or 'sent'}")
                links["send refused" if refused else "send"] += 1
                continue
            sent = take_turn(opened, step, now)
            if step.answer:
                answer(opened, step, step.answer, f"answer-{i}", now)
            base = baseline_turn(baselines[sent.role], sent)
            mine, theirs = measure(sent, count), measure(base, count)
            keel_cache.bill(mine, "\n".join((*sent.tools, sent.system)))
            base_cache.bill(theirs, base.system)
            links.update(c.rsplit(":", 1)[1] for c in sent.carried)
            links.update(["stub"] * len(sent.stubbed) + ["refused"] * len(sent.refused))
            shown = [*sent.carried, *(f"~{s}" for s in sent.stubbed)]
            shown += [f"!{r}" for r in sent.refused]
            rows.append(
                Row(
                    index=len(rows) + 1,
                    label=step.label,
                    role=sent.role,
                    carried=" ".join(shown) or "-",
                    keel=mine,
                    base=theirs,
                )
            )
    info = {
        "about": workload.about,
        "turns": len(rows),
        "links": dict(links),
        "baseline_contexts": {r: b.contexts for r, b in baselines.items()},
    }
    return rows, info


# ---------------------------------------------------------------------------------------
# Reporting

SUMS = ("chars", "tokens", "anthropic", "openai", "anthropic_min", "openai_min")


def total(rows: Sequence[Row], side: str) -> dict[str, float]:
    sums = dict.fromkeys(SUMS, 0.0)
    for row in rows:
        values = asdict(getattr(row, side))
        for key in SUMS:
            sums[key] += values[key]
    return sums


def kinds(rows: Sequence[Row], side: str, field_name: str = "kinds") -> dict[str, float]:
    tally: dict[str, float] = {}
    for row in rows:
        for kind, value in getattr(getattr(row, side), field_name).items():
            tally[kind] = tally.get(kind, 0) + value
    return tally


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    keel_sum, base_sum = total(rows, "keel"), total(rows, "base")
    ratios = {key: keel_sum[key] / base_sum[key] for key in SUMS if base_sum[key]}
    # The steady state: turns whose prefix was already cached on both sides.
    warm = [r for r in rows if r.keel.warm and r.base.warm]
    keel_warm, base_warm = total(warm, "keel"), total(warm, "base")
    for key in ("anthropic", "openai"):
        if base_warm[key]:
            ratios[f"{key}_warm"] = keel_warm[key] / base_warm[key]
    return {
        "turns": len(rows),
        "warm_turns": len(warm),
        "keel": keel_sum,
        "baseline": base_sum,
        "ratio": ratios,
    }


def report(rows: list[Row], info: dict[str, Any]) -> dict[str, Any]:
    roles = sorted({r.role for r in rows}, key=lambda r: min(x.index for x in rows if x.role == r))
    worst = max(rows, key=lambda r: r.keel.tokens - r.base.tokens)
    return {
        **info,
        "per_turn": [
            {
                "turn": r.index,
                "label": r.label,
                "role": r.role,
                "carried": r.carried,
                "keel": asdict(r.keel),
                "baseline": asdict(r.base),
            }
            for r in rows
        ],
        "per_role": {role: summary([r for r in rows if r.role == role]) for role in roles},
        "total": summary(rows),
        "breakdown": {
            "keel": kinds(rows, "keel"),
            "baseline": kinds(rows, "base"),
            "keel_billed": kinds(rows, "keel", "billed_kinds"),
            "baseline_billed": kinds(rows, "base", "billed_kinds"),
        },
        "worst_turn": {"turn": worst.index, "over": worst.keel.tokens - worst.base.tokens},
    }


def targets(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    ref, gen = results["reference"], results["generated"]
    checks = [
        ("reference: total tokens <= 100% of baseline", ref["total"]["ratio"]["tokens"], 1.0),
        ("reference: no turn over baseline + 150 tokens", ref["worst_turn"]["over"], 150),
        ("generated: total tokens <= 20% of baseline", gen["total"]["ratio"]["tokens"], 0.20),
        ("generated: billed (cache) <= 15% of baseline", gen["total"]["ratio"]["anthropic"], 0.15),
    ]
    return [{"target": t, "value": v, "limit": lim, "met": v <= lim} for t, v, lim in checks]


def pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def render(name: str, result: dict[str, Any]) -> str:
    out = [f"== {name}: {result['about']} — {result['turns']} turns", ""]
    links = ", ".join(f"{k} {v}" for k, v in sorted(result["links"].items()))
    out.append(f"links carried: {links}")
    out.append("carried: context@entity:link, ~stubbed, !refused. Keel, then the baseline:")
    out.append("characters, o200k tokens (K/B their ratio, K-B the difference), and bill: the")
    out += ["input tokens billed with Anthropic's prompt cache (write 1.25x, read 0.1x)", ""]
    head = f"{'#':>3} {'turn':<34} {'role':<15} {'carried':<34} {'chars':>6} {'base':>6}"
    out.append(head + f" {'tok':>6} {'base':>6} {'K/B':>5} {'K-B':>6} {'bill':>6} {'base':>7}")
    for t in result["per_turn"]:
        k, b = t["keel"], t["baseline"]
        carried = t["carried"] if len(t["carried"]) <= 34 else t["carried"][:33] + "…"
        out.append(
            f"{t['turn']:>3} {t['label'][:34]:<34} {t['role'][:15]:<15} {carried:<34} "
            f"{k['chars']:>6} {b['chars']:>6} {k['tokens']:>6} {b['tokens']:>6} "
            f"{pct(k['tokens'] / b['tokens']):>5} {k['tokens'] - b['tokens']:>+6} "
            f"{k['anthropic']:>6.0f} {b['anthropic']:>7.0f}"
        )
    out += ["", "per role (Keel / baseline):"]
    head = f"{'role':<16} {'turns':>5} {'chars':>8} {'base':>8} {'K/B':>5} {'tokens':>7}"
    head += f" {'base':>7} {'K/B':>5} {'bill 0.1':>8} {'base':>7} {'K/B':>5} {'bill 0.5 K/B':>13}"
    out.append(head)
    for role, s in [*result["per_role"].items(), ("TOTAL", result["total"])]:
        k, b, r = s["keel"], s["baseline"], s["ratio"]
        out.append(
            f"{role[:16]:<16} {s['turns']:>5} {k['chars']:>8.0f} {b['chars']:>8.0f} "
            f"{pct(r['chars']):>5} {k['tokens']:>7.0f} {b['tokens']:>7.0f} {pct(r['tokens']):>5} "
            f"{k['anthropic']:>8.0f} {b['anthropic']:>7.0f} {pct(r['anthropic']):>5} "
            f"{pct(r['openai']):>13}"
        )
    t = result["total"]
    r = t["ratio"]
    out.append(
        f"warm turns only ({t['warm_turns']}: both prefixes already cached): billed "
        f"Keel/baseline {pct(r['anthropic_warm'])} (Anthropic), {pct(r['openai_warm'])} (OpenAI)"
    )
    out.append(
        f"with the providers' {CACHE_MINIMUM:,}-token minimum cacheable prefix: billed "
        f"Keel/baseline {pct(r['anthropic_min'])} (Anthropic), {pct(r['openai_min'])} (OpenAI)"
    )
    out += ["", "where the tokens go (all turns; billed = with Anthropic's cache):"]
    parts = result["breakdown"]
    sums = {
        "keel": t["keel"]["tokens"],
        "baseline": t["baseline"]["tokens"],
        "keel_billed": t["keel"]["anthropic"],
        "baseline_billed": t["baseline"]["anthropic"],
    }
    order = ["identity", "tenancy", "rules", "catalog", "tools", "block markup", "stub"]
    order += ["contexts' own text", "persona", "skills", "time", "role state", "history"]
    order += ["input", "framing"]
    head = f"{'part':<19} {'Keel':>7} {'share':>5} {'/turn':>5} {'billed':>7} {'share':>5}"
    out.append(head + f" {'baseline':>9} {'share':>5} {'billed':>7} {'share':>5}")
    for kind in order:
        line = f"{kind:<19}"
        for column in ("keel", "keel_billed", "baseline", "baseline_billed"):
            value = parts[column].get(kind, 0)
            width = 9 if column == "baseline" else 7
            line += f" {value:>{width}.0f} {pct(value / sums[column]):>5}"
            if column == "keel":
                line += f" {value / t['turns']:>5.0f}"
        out.append(line)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="write the results to PATH")
    parser.add_argument("--tmpdir", type=Path, default=None, help="where brains and DBs go")
    parser.add_argument(
        "--baseline-rows",
        choices=("all", "capped"),
        default="all",
        help="the baseline's views: every entity's rows (default), or capped at state.rows",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    counter, counter_name = exact_counter()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="keel-prompt-size-", dir=args.tmpdir) as tmp:
        root = Path(tmp)
        workloads = [reference_workload()]
        workloads.append(generated_workload(generate_brain(root / "generated-brain")))
        for workload in workloads:
            rows, info = play(workload, root, counter, capped=args.baseline_rows == "capped")
            results[workload.name] = report(rows, info)
    checks = targets(results)
    for name, result in results.items():
        print(render(name, result), end="\n\n")
    print("targets:")
    for check in checks:
        verdict = "MET" if check["met"] else "MISSED"
        value = check["value"]
        shown = pct(value) if isinstance(value, float) else f"{value:+d} tokens"
        print(f"  {verdict:<6} {check['target']:<46} (measured {shown})")
    elapsed = time.perf_counter() - started
    print(f"\ncounter {counter_name}; {elapsed:.1f} s")
    if args.json is not None:
        document = {"counter": counter_name, "seconds": elapsed, "targets": checks}
        args.json.write_text(json.dumps({**document, "workloads": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
