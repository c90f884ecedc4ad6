"""A run's reach: the contexts a heartbeat, hook or scenario run carries, with their keys.

Three tiers, each replacing the one below: the layout (the entity's directory and every
one above it), the entity's own `reach:`, and a per-fire or per-step override. An
`entity` given to the run keys the reach's one keyed context.
"""

from __future__ import annotations

from dataclasses import replace

from keel.brain.problems import did_you_mean
from keel.brain.snapshot import Brain
from keel.brain.specs import EntitySpec, ReachEntry, Skip
from keel.errors import LinkError, UsageError
from keel.link.values import RunRef, entity_problem


def find_run(brain: Brain, run: RunRef) -> EntitySpec:
    """The entity a run is a run of, or a `UsageError` saying why not: its file did not
    load, its feature is switched off, or it names none (with the nearest real one)."""
    entity = brain.entity(run.kind, run.id)
    if entity is not None:
        return entity
    if run.key in brain.switched_off:
        raise UsageError(
            f"{run.key} belongs to feature '{brain.switched_off[run.key]}', which is switched "
            "off — set enabled: true in its FEATURE.md to run it"
        )
    if (skip := _skipped(brain, run)) is not None:
        raise UsageError(
            f"{run.key}: its file {skip.path} did not load — {_where(skip)}{skip.reason}; "
            "fix it (`keel doctor <brain>` lists every file that did not load)"
        )
    same_kind = [e.id for e in brain.entities.values() if e.kind == run.kind]
    raise UsageError(f"no {run.kind} '{run.id}' in this brain{did_you_mean(run.id, same_kind)}")


def no_role(brain: Brain, name: str, *, given_at: str | None = None) -> UsageError:
    """Why `name` is no role of this brain: its file is there but did not load (and why),
    or no file names it (with the nearest real one); `given_at` is the file and line that
    named it, when a file did."""
    file = f"{name}.agent.md"
    skip = next((s for s in brain.skips if s.path.rpartition("/")[2] == file), None)
    if skip is not None:
        return UsageError(
            f"role '{name}': its file {skip.path} did not load — {_where(skip)}{skip.reason}; "
            "fix it (`keel doctor <brain>` lists every file that did not load)"
        )
    where = f" (given at {given_at} — fix the name there)" if given_at else ""
    return UsageError(f"no role '{name}' in this brain{did_you_mean(name, brain.roles)}{where}")


def _skipped(brain: Brain, run: RunRef) -> Skip | None:
    """The first skip of the run's own file (`<id>.<kind>.md`, or its code half)."""
    names = {f"{run.id}.{run.kind}.md", f"{run.id}.{run.kind}.py"}
    return next((s for s in brain.skips if s.path.rpartition("/")[2] in names), None)


def _where(skip: Skip) -> str:
    return f"line {skip.line}: " if skip.line is not None else ""


def check_override(brain: Brain, run: RunRef, reach: tuple[ReachEntry, ...]) -> None:
    """A `UsageError` for a per-run reach naming a context the brain does not have.

    A caller who names the reach means those contexts; a typo would otherwise run without
    the context and say so only in the turn's warnings. (A reach written in an entity's
    file is content: doctor reports it, and the turn warns.)
    """
    for entry in reach:
        ident = entry.context
        if ident in brain.contexts:
            continue
        if (skip := brain.failed_contexts.get(ident)) is not None:
            raise UsageError(
                f"{run.key}: the reach names '{ident}', whose file {skip.path} did not load — "
                f"{_where(skip)}{skip.reason}; fix it (`keel doctor <brain>` lists every "
                "file that did not load)"
            )
        if ident in brain.switched_off:
            raise UsageError(
                f"{run.key}: the reach names '{ident}', of feature "
                f"'{brain.switched_off[ident]}', which is switched off — set enabled: true "
                "in its FEATURE.md, or leave it out of the reach"
            )
        hint = did_you_mean(ident, brain.contexts) or " — the brain has no contexts"
        raise UsageError(f"{run.key}: the reach names '{ident}', which is not a context{hint}")


def run_reach(
    brain: Brain,
    entity: EntitySpec,
    *,
    override: tuple[ReachEntry, ...] | None = None,
    key: str | None = None,
) -> tuple[ReachEntry, ...]:
    """The reach one run carries: the override or the entity's reach, keyed by `key`."""
    reach = override if override is not None else brain.reach_of(entity)
    for given in (key, *(r.entity for r in reach)):
        if (problem := entity_problem(given)) is not None:
            raise LinkError(f"{entity.key}: {problem}")
    if entity.kind == "heartbeat" and (key is not None or any(r.entity for r in reach)):
        raise LinkError(
            f"heartbeat:{entity.id} is a schedule, not one entity: its ticks carry no key — "
            "set the key where the turn speaks (send with about: {entity})"
        )
    if key is None:
        return reach
    keyed = [
        i
        for i, r in enumerate(reach)
        if r.entity is None and r.context in brain.contexts and brain.contexts[r.context].keyed
    ]
    if len(keyed) != 1:
        names = ", ".join(f"'{reach[i].context}'" for i in keyed) or "none"
        raise LinkError(
            f"entity '{key}' needs exactly one keyed context in the reach of {entity.key}, "
            f"found {len(keyed)} ({names}) — name each key in the reach instead "
            "(e.g. --reach context=KEY)"
        )
    index = keyed[0]
    return (*reach[:index], replace(reach[index], entity=key), *reach[index + 1 :])
