"""The context-stubbed finding: each stubbed context, with the knob to raise where it is set."""

from __future__ import annotations

from datetime import timedelta

from keel.brain import Brain
from keel.ledger import context_stubbed
from tests.ledger.values import T0, entry


def test_a_stubbed_context_names_its_knobs_most_often_first(reference_brain: Brain) -> None:
    entries = [
        entry(1, "policy", role="support", link="ask", knob="contexts.maxActive"),
        entry(2, "policy", role="support", link="ask", knob="contexts.maxActive"),
        entry(3, "policy", role="coach", link="ask", knob="chars"),
        entry(4, "client", role="client-desk", chars=500),  # attached: no finding
        entry(5, "client", role="client-desk", knob="contexts.turnChars", minutes=-5),  # too old
    ]
    (finding,) = context_stubbed(reference_brain, entries, since=T0)
    assert (finding.check, finding.group, finding.level) == (
        "context.stubbed",
        "Feature contexts",
        "warn",
    )
    assert (finding.subject, finding.file, finding.line) == (
        "policy",
        "features/returns/policy.context.md",
        None,
    )
    assert finding.message == (
        "stubbed 3 times since 2026-11-29 18:00 UTC (2 times by contexts.maxActive, once by "
        "chars) — "
        "raise contexts.maxActive (now 4 for role 'support': its contexts_budget.maxActive, "
        "or MANIFEST contexts:); raise chars in features/returns/policy.context.md (now 3000); "
        "or trim the context"
    )


def test_a_context_or_role_gone_from_the_brain_still_gets_its_finding(
    reference_brain: Brain,
) -> None:
    entries = [
        entry(1, "gone", role="nobody", knob="contexts.turnChars"),
        entry(2, "gone", role="nobody", knob="chars"),
    ]
    (finding,) = context_stubbed(reference_brain, entries, since=T0 - timedelta(days=1))
    assert finding.file is None
    assert finding.message.endswith(
        "(once by contexts.turnChars, once by chars) — raise contexts.turnChars; raise its chars; "
        "or trim the context"
    )


def test_nothing_stubbed_finds_nothing(reference_brain: Brain) -> None:
    assert context_stubbed(reference_brain, [entry(1, "policy", chars=10)], since=T0) == ()
