"""Heartbeats as DBOS schedules: one row per heartbeat, named `hb:<id>`, kept in step with
the brain's files.

A heartbeat's `schedule` is five cron fields (minute, hour, day of month, month, day of
week), in UTC; DBOS reads six, seconds first, so a tick fires at second 0 of its minute
(`seconds` changes that, for demos and tests that cannot wait a minute). `apply` upserts
a schedule per heartbeat that has one and deletes the `hb:` schedules whose heartbeat is
gone — DBOS's `apply_schedules` only upserts. Every tick is enqueued on the `keel-ticks`
queue under DBOS's id for it (`sched-hb:<id>-<time>`), which only workers take work from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from keel.brain.snapshot import Brain

PREFIX = "hb:"
QUEUE = "keel-ticks"
# How often a worker looks for ticks to take (DBOS's default, a second, is a tick late).
QUEUE_POLL_S = 0.2


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """One heartbeat's schedule as DBOS runs it."""

    name: str
    heartbeat: str
    cron: str  # six fields, seconds first


def dbos_cron(cron: str, seconds: str = "0") -> str:
    """A heartbeat's five-field cron in DBOS's six-field form (seconds first)."""
    fields = cron.split()
    return " ".join([seconds, *fields]) if len(fields) == 5 else " ".join(fields)


def schedules_of(brain: Brain, *, seconds: str = "0") -> Mapping[str, Schedule]:
    """Every heartbeat with a schedule, by schedule name."""
    found = {}
    for entity in brain.entities.values():
        if entity.kind == "heartbeat" and entity.schedule:
            name = f"{PREFIX}{entity.id}"
            found[name] = Schedule(
                name=name, heartbeat=entity.id, cron=dbos_cron(entity.schedule, seconds)
            )
    return dict(sorted(found.items()))


def apply(brain: Brain, *, model: str | None = None, seconds: str = "0") -> list[Schedule]:
    """Make DBOS's `hb:` schedules the brain's heartbeats (in a launched process)."""
    from dbos import DBOS

    from keel.runs.workflows import register

    wanted = schedules_of(brain, seconds=seconds)
    if wanted:
        DBOS.apply_schedules(
            [
                {
                    "schedule_name": s.name,
                    "workflow_fn": register().heartbeat,
                    "schedule": s.cron,
                    "context": {"heartbeat": s.heartbeat, "model": model},
                    "queue_name": QUEUE,
                }
                for s in wanted.values()
            ]
        )
    for held in DBOS.list_schedules(schedule_name_prefix=PREFIX):
        if held["schedule_name"] not in wanted:
            DBOS.delete_schedule(held["schedule_name"])
    return list(wanted.values())
