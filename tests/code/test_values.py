"""Answers are plain values: journaled with the turn as JSON, read back the same."""

from __future__ import annotations

import json

import pytest

from keel.brain.specs import ReachEntry
from keel.code.values import (
    EngageAnswer,
    Envelope,
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
        "message": "",
        "envelope": None,
        "lines": [],
    }


def test_a_chat_turn_view_carries_its_envelope_and_lines() -> None:
    envelope = Envelope(chat="tg:chat:1", thread="7", time="t", reply_to=(("m1", "hello"),))
    turn = TurnView(
        input="x",
        role="r",
        surface="chat",
        message="any news?",
        envelope=envelope,
        lines=(("user", "It's about T-481."),),
    )
    data = turn.to_json()
    assert data["envelope"] == {
        "chat": "tg:chat:1",
        "thread": "7",
        "time": "t",
        "sender": None,
        "reply_to": [{"id": "m1", "text": "hello"}],
    }
    assert data["lines"] == [{"role": "user", "text": "It's about T-481."}]
    assert data["message"] == "any news?"
