"""The one doctor: `keel doctor`, GET /v1/doctor, the dashboard and the `doctor_check`
tool (MCP's included) all report what `checkup` finds, on the same database.

It is the brain's checks (`keel.doctor.run_doctor`: files, bindings, reach, views read as
a turn reads them) plus, where the database holds turns, the context-stubbed finding for
the last seven days, from the ledger.
"""

from __future__ import annotations

from datetime import UTC, datetime

from keel.brain.snapshot import Brain
from keel.code.runner import CodeRunner
from keel.doctor import Report, run_doctor
from keel.doctor.scope import Risks
from keel.errors import StateRefused, StoreError
from keel.ledger.stubbed import context_stubbed
from keel.ledger.window import DEFAULT_SINCE, parse_since
from keel.state.schema import read_schema
from keel.store import Tx


def checkup(
    brain: Brain,
    tx: Tx | None,
    runner: CodeRunner | None = None,
    *,
    probe: bool = False,
    now: datetime | None = None,
    unreachable: str | None = None,
    refused: StateRefused | None = None,
    risks: Risks | None = None,
) -> Report:
    """The doctor's report on the brain, its views read and its ledger looked at in `tx`
    (None: the database could not be reached, and `unreachable` says why; `refused` when
    that was its own state SQL). `risks`: each tool capability's risk classes, from the
    tool registry the brain's roles call."""
    schema, note = None, unreachable
    if tx is not None:
        try:
            schema = read_schema(tx.connection.engine)
        except StoreError as exc:
            note = str(exc)
    reader = tx.connection if tx is not None and schema is not None else None
    report = run_doctor(
        brain,
        schema=schema,
        db_note=note,
        runner=runner,
        probe=probe,
        reader=reader,
        refused=refused,
        risks=risks,
    )
    if tx is None or schema is None or not schema.has("keel_ledger"):
        return report
    since = parse_since(DEFAULT_SINCE, now or datetime.now(UTC))
    found = context_stubbed(brain, tx.ledger(since=since), since=since)
    return Report.of([*report.findings, *found]) if found else report
