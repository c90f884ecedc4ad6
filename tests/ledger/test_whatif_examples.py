"""what-if on the reference brain's worked examples: unchanged knobs reproduce every
recorded attach and stub exactly; maxActive 1 keeps the strongest link of each turn."""

from __future__ import annotations

from typing import Any

from tests.ledger.examples import play
from tests.runtime.driver import Keel

WINDOW = ("--since", "2026-11-01T00:00:00Z", "--now", "2026-12-31T00:00:00Z")


def decided(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (d["context"], d["entity"], d["link"], d["status"], d["chars"], d["knob"]) for d in items
    ]


def test_what_if_on_the_worked_examples(keel: Keel) -> None:
    played = play(keel)
    unchanged_knobs_reproduce_every_recorded_decision(keel, played)
    max_active_one_keeps_the_first_link_of_each_turn(keel, played)


def unchanged_knobs_reproduce_every_recorded_decision(keel: Keel, played: int) -> None:
    replay = keel.json("what-if", *WINDOW)
    assert replay["set"] == []
    assert replay["turns"] == played == len(replay["per_turn"])
    carried = 0
    for turn in replay["per_turn"]:
        assert decided(turn["after"]) == decided(turn["before"]), turn
        assert turn["changed"] == [], turn
        assert turn["fit"]["replayed"] is False
        assert turn["fit"]["before"] is not None
        assert turn["fit"]["after"] == turn["fit"]["before"]
        assert turn["notes"] == []
        carried += len(turn["before"])
    assert carried >= played  # most turns carried a context: the check is not empty
    for context in replay["contexts"]:
        assert context["attached"]["before"] == context["attached"]["after"], context
        assert context["stubbed"]["before"] == context["stubbed"]["after"], context
    # what-if recorded nothing: the same replay again, and no more turns.
    assert keel.json("what-if", *WINDOW) == replay
    assert len(keel.json("turns", "--limit", "1000")["turns"]) == played


def max_active_one_keeps_the_first_link_of_each_turn(keel: Keel, played: int) -> None:
    one = ("--set", "contexts.maxActive=1", "--set", "role.support.contexts_budget.maxActive=1")
    replay = keel.json("what-if", *WINDOW, *one)
    assert replay["turns"] == played
    several = 0
    for turn in replay["per_turn"]:
        before, after = turn["before"], turn["after"]
        assert all(d["status"] == "attached" for d in before), "the examples fit their budgets"
        assert decided(after[:1]) == decided(before[:1])
        for was, now in zip(before[1:], after[1:], strict=True):
            assert (now["status"], now["knob"], now["chars"]) == (
                "stubbed",
                "contexts.maxActive",
                None,
            )
            assert (now["context"], now["entity"], now["link"]) == (
                was["context"],
                was["entity"],
                was["link"],
            )
        assert turn["changed"] == [
            d["context"] + (f"@{d['entity']}" if d["entity"] else "") for d in before[1:]
        ]
        several += len(before) > 1
        # Fewer contexts attached: a turn that changed is assembled again, and costs less.
        if turn["changed"]:
            assert turn["fit"]["replayed"] is True
            assert turn["fit"]["after"]["estimate"] < turn["fit"]["before"]["estimate"]
    assert several >= 4  # checkin, film of the day, two film ratings, the first touch draft
    largo = {c["context"]: c for c in replay["contexts"]}["largo"]
    assert largo["attached"] == {"before": 2, "after": 0}
    assert largo["stubbed_by"] == {"before": {}, "after": {"contexts.maxActive": 2}}
