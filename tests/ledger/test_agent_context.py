"""agent_context: per role, what each context cost its turns in the window."""

from __future__ import annotations

from datetime import timedelta

from keel.ledger import agent_context
from tests.ledger.values import T0, entry, summary

SINCE, UNTIL = T0, T0 + timedelta(hours=1)


def test_each_context_counts_its_turns_stubs_sizes_links_and_opens() -> None:
    entries = [
        entry(1, "ticket", chars=800, entity="T-1"),
        entry(1, "ticket", chars=400, entity="T-2"),  # two tickets, one turn
        entry(2, "ticket", chars=600, entity="T-1"),
        entry(3, "ticket", link="ask", knob="contexts.maxActive"),
        entry(3, "policy", link="ask", chars=1000),
        entry(4, "policy", link="ask", knob="contexts.turnChars"),
        entry(4, "policy", link="ask", knob="contexts.turnChars", chat="tg:chat:2"),
        entry(5, "ticket", role="sdr", chars=9999),  # another role
        entry(6, "ticket", chars=9999, minutes=-1),  # before the window
    ]
    turns = [summary(n, catalog=("kb", "policy")) for n in (1, 2, 3, 4)] + [
        summary(5, role="sdr", catalog=("kb",)),
        summary(7, catalog=("kb", "policy")),  # a turn that carried nothing
    ]
    report = agent_context("support", entries, turns, since=SINCE, until=UNTIL)
    assert report.turns == 6  # four of the ledger, one more of the journal, another chat's 4
    by = {c.context: c for c in report.contexts}
    assert [c.context for c in report.contexts] == ["ticket", "policy", "kb"]
    ticket = by["ticket"]
    assert (ticket.attached, ticket.stubbed, dict(ticket.stubbed_by)) == (
        2,
        1,
        {"contexts.maxActive": 1},
    )
    assert (ticket.mean_chars, ticket.max_chars) == (600, 800)
    assert dict(ticket.links) == {"chat": 3, "ask": 1}
    assert (ticket.offered, ticket.opened) == (None, None)
    policy = by["policy"]
    assert (policy.attached, policy.stubbed, policy.mean_chars) == (1, 2, 1000)
    assert (policy.offered, policy.opened) == (5, 3)
    kb = by["kb"]
    assert (kb.attached, kb.stubbed, kb.offered, kb.opened, kb.feature) == (0, 0, 5, 0, None)
    assert report.to_json()["contexts"][1] == {
        "context": "policy",
        "feature": "support",
        "attached": 1,
        "stubbed": 2,
        "stubbed_by": {"contexts.turnChars": 2},
        "mean_chars": 1000,
        "max_chars": 1000,
        "links": {"ask": 3},
        "offered": 5,
        "opened": 3,
    }


def test_a_role_with_no_turns_in_the_window_reports_none() -> None:
    report = agent_context(
        "support", [entry(1, "ticket", minutes=90)], [], since=SINCE, until=UNTIL
    )
    assert (report.turns, report.contexts) == (0, ())
    assert report.to_json() == {
        "role": "support",
        "since": SINCE.isoformat(),
        "until": UNTIL.isoformat(),
        "turns": 0,
        "contexts": [],
    }
