"""What a run cannot be: a heartbeat whose file did not load, and a per-run reach naming a
context the brain does not have, each a usage error that says why and what to do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from keel.brain import load_brain
from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.errors import UsageError
from keel.link.reach import check_override, find_run
from keel.link.values import RunRef

WriteBrain = Callable[[dict[str, str | bytes]], Path]

BEAT = "---\ndescription: Chase.\nschedule: {schedule}\nagent: clerk\n---\nChase the invoices.\n"
CHASE = RunRef(kind="heartbeat", id="invoice-chase")


@pytest.fixture
def brain(write_brain: WriteBrain) -> Brain:
    return load_brain(
        write_brain(
            {
                "features/billing/clerk.agent.md": "---\ncontexts: ['*']\n---\nA clerk.\n",
                "features/billing/invoice.context.md": "---\nwhen: [run]\n---\nInvoices.\n",
                "features/billing/ledger.context.md": "---\nwhen: [run]\nwhne: x\n---\nL.\n",
                "features/billing/invoice-chase.heartbeat.md": BEAT.format(
                    schedule='"99 99 * * *"'
                ),
                "features/billing/daily.heartbeat.md": BEAT.format(schedule='"0 9 * * *"'),
                "features/old/FEATURE.md": "---\ndescription: Old.\nenabled: false\n---\n",
                "features/old/legacy.context.md": "---\nwhen: [run]\n---\nLegacy.\n",
            }
        )
    )


def test_a_heartbeat_whose_file_did_not_load_says_so_and_why(brain: Brain) -> None:
    with pytest.raises(UsageError) as caught:
        find_run(brain, CHASE)
    said = str(caught.value)
    assert said.startswith(
        "heartbeat:invoice-chase: its file features/billing/invoice-chase.heartbeat.md did "
        "not load — line 3: 'schedule': '99 99 * * *': the minute field is '99'"
    ), said
    assert "`keel doctor <brain>`" in said
    assert "no heartbeat" not in said


def test_a_heartbeat_that_is_not_there_names_the_nearest(brain: Brain) -> None:
    with pytest.raises(UsageError, match=r"no heartbeat 'dayly' in this brain — did you mean"):
        find_run(brain, RunRef(kind="heartbeat", id="dayly"))


@pytest.mark.parametrize(
    ("context", "said"),
    [
        pytest.param("invoce", r"names 'invoce', which is not a context — did you mean "
                     r"'invoice'\?", id="near"),
        pytest.param("zzz", r"names 'zzz', which is not a context — expected one of: invoice$",
                     id="far"),
        pytest.param("ledger", r"names 'ledger', whose file features/billing/ledger.context.md "
                     r"did not load — line 3: .*`keel doctor <brain>`", id="failed"),
        pytest.param("legacy", r"names 'legacy', of feature 'old', which is switched off",
                     id="switched-off"),
    ],
)  # fmt: skip
def test_a_reach_naming_no_context_is_a_usage_error(brain: Brain, context: str, said: str) -> None:
    daily = RunRef(kind="heartbeat", id="daily")
    reach = (ReachEntry(context="invoice"), ReachEntry(context=context))
    with pytest.raises(UsageError, match=rf"^heartbeat:daily: the reach {said}"):
        check_override(brain, daily, reach)


def test_a_reach_of_real_contexts_passes(brain: Brain) -> None:
    check_override(brain, RunRef(kind="heartbeat", id="daily"), (ReachEntry(context="invoice"),))
    check_override(brain, RunRef(kind="heartbeat", id="daily"), ())
