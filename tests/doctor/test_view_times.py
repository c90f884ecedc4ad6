"""Doctor reads each view a turn reads, as a turn does, within `state.readTimeoutMs`: a view
past the deadline (a stub on every turn) warns, and so does one over half of it."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count

import pytest

from keel.runtime.engine import Engine
from tests.conftest import WriteBrain
from tests.doctor.brains import CLEAN, ROLE, TICKET, doctor, of
from tests.state.guard import guarded

MANIFEST = "constitution/MANIFEST.yaml"
FOREVER = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
FIX = (
    "make it end sooner (a recursive query needs a stop, a filter an index), or raise "
    "state.readTimeoutMs in constitution/MANIFEST.yaml"
)


def ticking(seconds: float) -> Callable[[], float]:
    """A clock that moves `seconds` on each look: every read doctor times takes that long."""
    ticks = count(0.0, seconds)
    return lambda: next(ticks)


def test_views_that_never_end_warn_at_the_line_that_carries_them(
    write_brain: WriteBrain, database_url: str
) -> None:
    files: dict[str, str | bytes] = {
        **CLEAN,
        MANIFEST: "state: { readTimeoutMs: 50 }\n",
        "state/002_forever.sql": (
            f"CREATE VIEW forever AS {FOREVER};\nCREATE VIEW forever_queue AS {FOREVER};\n"
        ),
        TICKET: (
            "---\ndescription: One ticket.\nentity: ticket id\nwhen: [chat, ask]\ndata:\n"
            "  - { view: ticket_card, by: ticket_id }\n  - { view: forever, by: i }\n"
            "---\nT.\n"
        ),
        ROLE: (
            "---\ncontexts: [ticket, digest]\ncapabilities: [context:read]\nskills: [tone]\n"
            "state: [queue, forever_queue]\n---\nYou.\n"
        ),
    }
    with Engine(write_brain(files), database_url, watch=False) as engine:
        engine.apply_state()
        with guarded(engine.database):
            report = engine.doctor()
    late = of(report, "view.timeout")
    assert [(f.level, f.subject, f.file, f.line) for f in late] == [
        ("warn", "view 'forever_queue'", ROLE, 5),
        ("warn", "view 'forever'", TICKET, 7),
    ]
    assert late[1].message == (
        "view 'forever' did not finish within state.readTimeoutMs (50 ms) when doctor read it "
        f"as a turn does — every turn that reads it shows a stub instead of its rows; {FIX}"
    )


def test_a_view_over_half_its_deadline_warns_with_its_time(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, clock=ticking(1.5))
    slow = of(report, "view.slow")
    assert [(f.level, f.subject, f.file, f.line) for f in slow] == [
        ("warn", "view 'queue'", ROLE, 5),
        ("warn", "view 'ticket_card'", TICKET, 6),
    ]
    assert slow[1].message == (
        "view 'ticket_card' took 1,500 ms to read, over half of state.readTimeoutMs (2000 ms) "
        "— under more load it may pass it, and then turns show a stub instead of its rows; "
        f"{FIX}"
    )
    assert len(report.findings) == 2


@pytest.mark.parametrize("seconds", [pytest.param(1.0, id="half"), pytest.param(0.0, id="none")])
def test_a_view_within_half_its_deadline_is_fine(write_brain: WriteBrain, seconds: float) -> None:
    assert doctor(write_brain, clock=ticking(seconds)).findings == ()


def test_views_the_database_lacks_are_not_timed(write_brain: WriteBrain) -> None:
    ticket = "---\nwhen: [chat]\ndata:\n  - nothing_here\n---\nT.\n"
    report = doctor(write_brain, {TICKET: ticket}, clock=ticking(1.5))
    assert [f.check for f in report.findings if f.check.startswith("view.")] == [
        "view.missing",
        "view.slow",
    ], "queue, in the role's state, is timed; the missing view only fails"
