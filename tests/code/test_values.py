"""Answers are plain values: journaled with the turn as JSON, read back the same."""

from __future__ import annotations

import json

import pytest

from keel.brain.specs import ReachEntry
from keel.code.values import (
    EngageAnswer,
    Failure,
    GateResult,
    MatchAnswer,
    RenderAnswer,
    RunView,
    Section,
    TurnView,
)

FAILURE = Failure(file="features/a/b.context.py", kind="timeout", reason="ran past", line=4)
ANSWERS = [
    pytest.param(
        MatchAnswer(context="ticket", linked=True, entity="T-1", log=("saw it",)), id="match"
    ),
    pytest.param(MatchAnswer(context="ticket", failure=FAILURE), id="match-failed"),
    pytest.param(
        RenderAnswer(context="ticket", entity=None, sections=(Section(key="sla", text="due"),)),
        id="render",
    ),
    pytest.param(
        EngageAnswer(
            engage=True, attach=(ReachEntry(context="ticket", entity="T-1"),), dropped=("x",)
        ),
        id="engage",
    ),
    pytest.param(
        GateResult(hook="hook:x", reach=(ReachEntry(context="faq"),), entity=None, failure=FAILURE),
        id="gate",
    ),
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_answers_round_trip_through_json(
    answer: MatchAnswer | RenderAnswer | EngageAnswer | GateResult,
) -> None:
    data = json.loads(json.dumps(answer.to_json()))
    assert type(answer).from_json(data) == answer


def test_a_failure_reads_as_file_line_reason() -> None:
    assert str(FAILURE) == "features/a/b.context.py:4: ran past"
    assert str(Failure(file="x.py", kind="load", reason="gone")) == "x.py: gone"


def test_a_turn_view_is_plain_json() -> None:
    turn = TurnView(
        input="hi",
        role="coach",
        surface="run",
        subject_id="heartbeat:evening",
        run=RunView(feature="coach", reach=(ReachEntry(context="pick"),)),
    )
    assert turn.to_json() == {
        "input": "hi",
        "role": "coach",
        "surface": "run",
        "subject_id": "heartbeat:evening",
        "run": {"feature": "coach", "reach": [{"context": "pick", "entity": None}]},
    }
