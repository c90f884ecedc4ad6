"""`run_doctor`: every check over one brain snapshot, in report order."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection

from keel.brain.snapshot import Brain
from keel.code.runner import CodeRunner
from keel.doctor import (
    access,
    code,
    contexts,
    entities,
    people,
    roles,
    room,
    state,
    tenancy,
    views,
)
from keel.doctor.findings import Finding, Report
from keel.doctor.scope import Risks, Scope
from keel.errors import StateRefused
from keel.state.schema import Schema


def run_doctor(
    brain: Brain,
    *,
    schema: Schema | None,
    db_note: str | None = None,
    runner: CodeRunner | None = None,
    probe: bool = False,
    reader: Connection | None = None,
    clock: Callable[[], float] = time.monotonic,
    refused: StateRefused | None = None,
    risks: Risks | None = None,
) -> Report:
    """Check a loaded brain and return what is wrong with it.

    `schema` is the database's tables and views, or None when no database could be reached —
    then the view checks say they did not look, and why (`db_note`). `runner` is the runner
    that loads the brain's code files, each in a worker within its timeout, as a turn
    would; without one, a brain that has code gets a note that it was not loaded. `probe`
    also calls each match, gate and chat policy once on a sample. `reader`, a connection
    to that database, lets the view checks read each view a turn reads, as a turn does and
    within `state.readTimeoutMs`, timed by `clock` (seconds); without one they only check
    names; `refused` is the brain's own state file the database refused (so no view could
    be read). `risks` gives each tool capability's risk classes, so an approver named for a
    class is counted only for the classes that capability's cards carry. Apart from that
    and re-reading frontmatter for line numbers, this reads nothing and writes nothing (a
    view's read is rolled back).
    """
    scope = Scope(
        brain,
        schema,
        db_note,
        runner=runner,
        probe=probe,
        reader=reader,
        clock=clock,
        refused=refused,
        risks=risks,
    )
    findings: list[Finding] = []
    for module in (entities, code, access, tenancy, people, contexts, state, views, roles, room):
        findings.extend(module.check(scope))
    return Report.of(findings)
