"""The context-stubbed finding: a context a budget kept out of a turn in the window.

One finding per context, naming each knob that stubbed it (most often first), with the
knob's value now and where to raise it — `contexts.maxActive` or `contexts.turnChars` (the
role's `contexts_budget:` or MANIFEST `contexts:`), or the context's own `chars` — or to
trim the context instead. It is a doctor finding (`keel doctor` shows it when the database
holds turns), built from ledger entries and the brain as it is now.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime

from keel.brain.knobs import context_chars, turn_knobs
from keel.brain.snapshot import Brain
from keel.doctor.findings import Finding
from keel.store.ledger import LedgerEntry

CHECK = "context.stubbed"


def context_stubbed(
    brain: Brain, entries: Sequence[LedgerEntry], *, since: datetime
) -> tuple[Finding, ...]:
    """A warning per context stubbed in the entries, with the knobs to raise."""
    knobs: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for entry in entries:
        if entry.knob is not None and entry.at >= since:
            knobs[entry.context][(entry.knob, entry.role)] += 1
    return tuple(_finding(brain, ident, counts, since) for ident, counts in sorted(knobs.items()))


def _finding(
    brain: Brain, ident: str, counts: Counter[tuple[str, str]], since: datetime
) -> Finding:
    total = sum(counts.values())
    by_knob: Counter[str] = Counter()
    for (knob, _), n in counts.items():
        by_knob[knob] += n
    seen = ", ".join(
        f"{'once' if n == 1 else f'{n} times'} by {knob}" for knob, n in by_knob.most_common()
    )
    advice = [_advice(brain, ident, knob, role) for (knob, role), _ in counts.most_common()]
    unique = list(dict.fromkeys(a for a in advice if a))
    times = "once" if total == 1 else f"{total} times"
    context = brain.contexts.get(ident)
    return Finding(
        check=CHECK,
        group="Feature contexts",
        level="warn",
        subject=ident,
        file=context.path if context is not None else None,
        line=None,
        message=(
            f"stubbed {times} since {since:%Y-%m-%d %H:%M} UTC ({seen}) — "
            + "; ".join([*unique, "or trim the context"])
        ),
    )


def _advice(brain: Brain, ident: str, knob: str, role_id: str) -> str:
    """Which knob to raise, its value now, and where it is set."""
    role = brain.roles.get(role_id)
    context = brain.contexts.get(ident)
    if knob == "chars":
        if context is None:
            return "raise its chars"
        now = context_chars(context, role, brain.manifest)
        return f"raise chars in {context.path} (now {now})"
    if role is None:
        return f"raise {knob}"
    values = turn_knobs(role, brain.manifest)
    now = values.max_active if knob == "contexts.maxActive" else values.turn_chars
    name = knob.split(".", 1)[1]
    return (
        f"raise {knob} (now {now} for role '{role_id}': its contexts_budget.{name}, "
        "or MANIFEST contexts:)"
    )
