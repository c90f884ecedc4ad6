"""A hook's fire: what its gate (`<id>.hook.py`) makes it a run of — the reach and the key.

The gate sees the event and `ctx.reach` (the hook's own reach: its `reach:`, else its
directory and the ones above it) and answers one of:

- `None` or `{}` — the fire carries the hook's own reach;
- `{"reach": [{"context": id, "entity"?: key}, ...]}` — this reach instead, for this fire;
- `{"entity": key}` — the reach's one keyed context takes this key;
- both — the given reach, its one keyed context taking the key.

An entity the reach cannot take (no keyed context without a key, or several), a context
that does not exist, a key on a context that names no entity: each fails the fire and
says which contexts it found. So does a gate that raises, hangs or does not load. A hook
with no gate fires with its own reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keel.brain.problems import did_you_mean
from keel.brain.snapshot import Brain
from keel.brain.specs import EntitySpec, ReachEntry
from keel.code.runner import CodeRunner
from keel.code.values import DEFAULT_TIMEOUT_MS, Failure, GateCall, GateResult
from keel.errors import LinkError
from keel.link.reach import run_reach

_EFFECT = "until then every fire of the hook fails"


def fire_gate(
    runner: CodeRunner,
    brain: Brain,
    hook: EntitySpec,
    event: Mapping[str, Any],
    *,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> GateResult:
    """Run the hook's gate on one event; the fire's reach and entity, or why it fails."""
    own = brain.reach_of(hook)
    if hook.code_path is None:
        return GateResult(hook=hook.key, reach=own)
    call = GateCall(
        hook=hook.key, path=hook.code_path, event=event, reach=own, timeout_ms=timeout_ms
    )
    answer = runner.gate(call)
    if answer.failure is not None:
        return GateResult(hook=hook.key, failure=answer.failure, log=answer.log)
    problem = _unknown(brain, answer.reach) if answer.reach is not None else None
    if problem is None and answer.entity is not None:
        problem = _cannot_key(
            brain, answer.reach if answer.reach is not None else own, answer.entity
        )
    if problem is None:
        try:
            reach = run_reach(brain, hook, override=answer.reach, key=answer.entity)
        except LinkError as exc:
            problem = str(exc)
    if problem is not None:
        failure = Failure(
            file=hook.code_path, kind="shape", reason=f"{problem}; {_EFFECT}", line=answer.line
        )
        return GateResult(hook=hook.key, failure=failure, log=answer.log)
    return GateResult(hook=hook.key, reach=reach, entity=answer.entity, log=answer.log)


def _unknown(brain: Brain, reach: tuple[ReachEntry, ...]) -> str | None:
    """Why a reach the gate returned cannot be used: a context missing, or keyed wrongly."""
    for entry in reach:
        spec = brain.contexts.get(entry.context)
        if spec is None:
            return (
                f"the gate's reach names context {entry.context!r}, which is not in this brain"
                f"{did_you_mean(entry.context, brain.contexts)}"
            )
        if entry.entity is not None and not spec.keyed:
            return (
                f"the gate's reach gives context {entry.context!r} the key {entry.entity!r}, "
                "but that context names no entity — leave 'entity' out of that entry"
            )
    return None


def _cannot_key(brain: Brain, reach: tuple[ReachEntry, ...], entity: str) -> str | None:
    """Why the reach cannot take the gate's entity: it needs exactly one keyed context."""
    keyed = [
        r.context
        for r in reach
        if r.entity is None and r.context in brain.contexts and brain.contexts[r.context].keyed
    ]
    if len(keyed) == 1:
        return None
    found = ", ".join(f"'{c}'" for c in keyed) if keyed else "none"
    every = ", ".join(f"'{r.context}'" for r in reach) or "no context at all"
    return (
        f"the gate returned the entity {entity!r}, but the fire's reach ({every}) has "
        f"{len(keyed)} keyed contexts without a key ({found}), and an entity needs exactly one"
        " — return {'reach': [{'context': ..., 'entity': ...}]} naming each key instead"
    )
