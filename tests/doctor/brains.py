"""Small brains for doctor tests: one clean brain, and a way to run doctor on a variant."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sqlalchemy import Connection

from keel.brain import Brain, load_brain
from keel.code.probe import code_files
from keel.code.runner import CodeRunner
from keel.doctor import Finding, Report, run_doctor
from keel.state.database import connect
from keel.state.schema import Schema, read_schema

ROLE = "features/desk/support.agent.md"
TICKET = "features/desk/ticket.context.md"
BEAT = "features/desk/daily.heartbeat.md"
ACCESS = "constitution/access.yaml"

# A brain doctor has nothing to say about; each test breaks one thing in a copy of it.
CLEAN: dict[str, str] = {
    "state/001_desk.sql": (
        "CREATE TABLE tickets (ticket_id TEXT, subject TEXT);\n"
        "CREATE VIEW ticket_card AS SELECT ticket_id, subject FROM tickets;\n"
        "CREATE VIEW queue AS SELECT subject FROM tickets;\n"
    ),
    ROLE: (
        "---\n"
        "contexts: [ticket, digest]\n"
        "capabilities: [context:read]\n"
        "skills: [tone]\n"
        "state: [queue]\n"
        "---\n"
        "You are the desk.\n"
    ),
    "features/desk/tone.skill.md": "---\ndescription: Tone.\n---\nBe brief.\n",
    TICKET: (
        "---\n"
        "description: One ticket.\n"
        "entity: ticket id\n"
        "when: [chat, ask]\n"
        "data:\n"
        "  - { view: ticket_card, by: ticket_id }\n"
        "---\n"
        "Answer about the ticket.\n"
    ),
    "features/desk/digest.context.md": "---\nwhen: [run]\n---\nList the queue.\n",
    BEAT: "---\nschedule: '0 8 * * *'\nagent: support\n---\nPost the queue.\n",
    ACCESS: (
        "bots:\n"
        "  desk:\n"
        "    default: { role: support }\n"
        "    chats:\n"
        '      "tg:chat:-1":\n'
        "        role: support\n"
        "        contexts: { ticket: T-1 }\n"
    ),
}

WriteBrain = Callable[[dict[str, str | bytes]], Path]


def doctor(
    write_brain: WriteBrain,
    changes: Mapping[str, str | None] | None = None,
    *,
    database: bool = True,
    db_note: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Report:
    """Run doctor on the clean brain with `changes` (a None value deletes that file), on an
    in-memory database that holds its state (none with `database=False`); `clock` times
    the views doctor reads."""
    merged: dict[str, str | None] = {**CLEAN, **(changes or {})}
    files: dict[str, str | bytes] = {p: t for p, t in merged.items() if t is not None}
    brain = load_brain(write_brain(files))
    if not database:
        return _run(brain, schema=None, reader=None, db_note=db_note, clock=clock)
    engine = connect("sqlite://", brain)
    schema = read_schema(engine)
    with engine.connect() as reader:
        return _run(brain, schema=schema, reader=reader, db_note=db_note, clock=clock)


def _run(
    brain: Brain,
    *,
    schema: Schema | None,
    reader: Connection | None,
    db_note: str | None,
    clock: Callable[[], float],
) -> Report:
    if not code_files(brain):
        return run_doctor(brain, schema=schema, db_note=db_note, reader=reader, clock=clock)
    with CodeRunner(brain.root) as runner:
        return run_doctor(
            brain, schema=schema, db_note=db_note, runner=runner, reader=reader, clock=clock
        )


def of(report: Report, check: str) -> list[Finding]:
    """The findings of one check."""
    return [f for f in report.findings if f.check == check]


def only(report: Report, check: str) -> Finding:
    """The one finding of the report, which must be of this check."""
    assert [f.check for f in report.findings] == [check], report.findings
    return report.findings[0]
