"""Checking what brain code answered: every wrong shape is a failure that says what to return."""

from __future__ import annotations

import re
from typing import Any

import pytest

from keel.brain.specs import ReachEntry
from keel.code.answers import (
    described,
    engage_answer,
    gate_answer,
    match_answer,
    merged_attach,
    render_answer,
)
from keel.code.values import (
    EngageAnswer,
    EngageCall,
    Failure,
    GateCall,
    MatchCall,
    RenderCall,
    Reply,
    Section,
    TurnView,
)

PATH = "features/desk/ticket.context.py"
TURN = TurnView(input="T-481 is late", role="support", surface="chat")


def _match(keyed: bool = True) -> MatchCall:
    return MatchCall(context="ticket", path=PATH, keyed=keyed, turn=TURN)


def _render(views: tuple[str, ...] = ("support_ticket_card",)) -> RenderCall:
    return RenderCall(context="ticket", path=PATH, entity="T-481", views=views)


@pytest.mark.parametrize(
    ("value", "linked", "entity"),
    [
        pytest.param(None, False, None, id="none-links-nothing"),
        pytest.param({}, True, None, id="empty-links-without-key"),
        pytest.param({"entity": "T-481"}, True, "T-481", id="entity-links-with-key"),
        pytest.param({"entity": None}, True, None, id="entity-none-links-without-key"),
    ],
)
def test_a_match_links_with_or_without_a_key(value: Any, linked: bool, entity: str | None) -> None:
    answer = match_answer(_match(), Reply(value=value, line=4))
    assert (answer.linked, answer.entity, answer.failure) == (linked, entity, None)


@pytest.mark.parametrize(
    ("value", "keyed", "pattern"),
    [
        pytest.param(
            "T-481",
            True,
            r"match returned a str \('T-481'\) — return \{'entity': key\}",
            id="string",
        ),
        pytest.param(["T-481"], True, r"match returned a list of 1 item — return", id="list"),
        pytest.param(True, True, r"match returned a bool \(True\)", id="bool"),
        pytest.param(
            {"entity": "T-1"},
            False,
            r"context 'ticket' names no entity .* return \{\} to link it",
            id="entity-on-unkeyed",
        ),
        pytest.param(
            {"entity": "x" * 201},
            True,
            r"an entity key of 201 characters — a key is 1 to 200",
            id="over-long-key",
        ),
        pytest.param({"entity": ""}, True, r"an entity key of 0 characters", id="empty-key"),
        pytest.param(
            {"entity": 481},
            True,
            r"the entity an int \(481\) — an entity key is a string",
            id="number-key",
        ),
        pytest.param(
            {"entitiy": "T-1"},
            True,
            r"the key 'entitiy' — did you mean 'entity'\?",
            id="misspelt-key",
        ),
    ],
)
def test_a_wrong_match_links_nothing_and_says_what_to_return(
    value: Any, keyed: bool, pattern: str
) -> None:
    answer = match_answer(_match(keyed), Reply(value=value, line=4))
    assert not answer.linked
    assert answer.failure is not None
    assert answer.failure.kind == "shape"
    assert answer.failure.line == 4
    assert answer.failure.reason.endswith("until then it links nothing")
    assert str(answer.failure).startswith(f"{PATH}:4: ")
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


def test_a_value_that_is_not_plain_data_fails_the_call() -> None:
    answer = match_answer(_match(), Reply(unplain="a set", line=7))
    assert answer.failure is not None
    assert answer.failure.reason.startswith("match returned a set, which is not plain data")


def test_a_failure_from_the_worker_passes_through() -> None:
    failure = Failure(file=PATH, kind="timeout", reason="ran past", line=3)
    assert match_answer(_match(), Reply(failure=failure)).failure is failure
    assert render_answer(_render(), Reply(failure=failure)).failure is failure


def test_code_without_the_function_answers_nothing_and_fails_nothing() -> None:
    assert match_answer(_match(), Reply(absent=True)).linked is False
    assert match_answer(_match(), Reply(absent=True)).failure is None
    assert render_answer(_render(), Reply(absent=True)).sections == ()


def test_a_render_returns_its_sections_in_order() -> None:
    value = [{"key": "sla", "text": "due 12:00"}, {"key": "notes_2", "text": ""}]
    answer = render_answer(_render(), Reply(value=value))
    assert answer.failure is None
    assert answer.sections == (
        Section(key="sla", text="due 12:00"),
        Section(key="notes_2", text=""),
    )


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        pytest.param(None, r"render returned None — return a list of sections", id="none"),
        pytest.param(
            {"key": "sla", "text": "x"},
            r"render returned a dict with 'key', 'text' — return a list",
            id="dict",
        ),
        pytest.param(["sla"], r"render's section 1 is a str \('sla'\)", id="not-a-section"),
        pytest.param(
            [{"key": "sla"}], r"render's section 1 is a dict with 'key'", id="missing-text"
        ),
        pytest.param(
            [{"key": "sla", "text": "x", "extra": 1}], r"and nothing else", id="extra-key"
        ),
        pytest.param(
            [{"key": "SLA", "text": "x"}],
            r"the section key 'SLA' — a key is a lowercase identifier",
            id="uppercase",
        ),
        pytest.param([{"key": "9lives", "text": "x"}], r"starting with a letter", id="digit-first"),
        pytest.param([{"key": "", "text": "x"}], r"a section key of 0 characters", id="empty-key"),
        pytest.param(
            [{"key": "k" * 65, "text": "x"}], r"a section key of 65 characters", id="over-long-key"
        ),
        pytest.param([{"key": 3, "text": "x"}], r"a section key an int \(3\)", id="number-key"),
        pytest.param(
            [{"key": "instructions", "text": "x"}],
            r"'instructions', which is the context's own",
            id="instructions",
        ),
        pytest.param(
            [{"key": "support_ticket_card", "text": "x"}],
            r"one of the context's views",
            id="a-view",
        ),
        pytest.param(
            [{"key": "sla", "text": "a"}, {"key": "sla", "text": "b"}],
            r"'sla' twice",
            id="duplicate",
        ),
        pytest.param(
            [{"key": "sla", "text": 12}],
            r"section 'sla' has text an int \(12\) — text is a str",
            id="text-not-str",
        ),
    ],
)
def test_a_wrong_render_renders_nothing(value: Any, pattern: str) -> None:
    answer = render_answer(_render(), Reply(value=value, line=9))
    assert answer.sections == ()
    assert answer.failure is not None
    assert answer.failure.line == 9
    assert answer.failure.reason.endswith("until then it renders nothing")
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


CONTEXTS = {"ticket": True, "kb": False, "client": True}


def _engage(value: Any) -> EngageAnswer:
    call = EngageCall(
        bot="desk", path="constitution/desk.engage.py", message={"text": "hi"}, contexts=CONTEXTS
    )
    return engage_answer(call, Reply(value=value, line=2))


def test_engage_keeps_good_attach_entries_and_drops_each_bad_one_with_its_reason() -> None:
    answer = _engage(
        {
            "engage": True,
            "attach": [
                {"context": "ticket", "entity": "T-481"},
                {"context": "kb"},
                {"context": "tickets", "entity": "T-1"},
                {"context": "kb", "entity": "faq-3"},
                {"context": ""},
                {"context": "ticket", "entity": "x" * 201},
                {"context": "ticket", "key": "T-2"},
                "ticket",
                {"entity": "T-3"},
                {"context": 7},
            ],
        }
    )
    assert answer.failure is None
    assert answer.engage is True
    assert answer.attach == (ReachEntry(context="ticket", entity="T-481"), ReachEntry(context="kb"))
    reasons = "\n".join(answer.dropped)
    assert len(answer.dropped) == 8
    # Entries count from 1: the third entry is entry 3.
    assert (
        "attach entry 3 dropped: no context 'tickets' in this brain — did you mean 'ticket'?"
        in reasons
    )
    assert (
        "attach entry 4 dropped: context 'kb' names no entity, so it takes no key ('faq-3')"
        in reasons
    )
    assert "attach entry 5 dropped: an entry without a context id — name one" in reasons
    assert "attach entry 6 dropped: the entry returned an entity key of 201 characters" in reasons
    assert "attach entry 7 dropped: the entry returned the key 'key'" in reasons
    assert "attach entry 8 dropped: a str ('ticket') is not {'context': id" in reasons
    assert "attach entry 9 dropped: an entry without a context id — name one" in reasons
    assert "attach entry 10 dropped: 'context' is an int (7) — a context id is a string" in reasons
    assert " is None" not in reasons
    assert all(r.startswith("constitution/desk.engage.py: ") for r in answer.dropped)


@pytest.mark.parametrize(
    ("value", "engage"),
    [
        pytest.param(None, None, id="no-verdict"),
        pytest.param({"engage": False}, False, id="no-attach"),
        pytest.param({"engage": True, "attach": []}, True, id="empty-attach"),
    ],
)
def test_engage_verdicts(value: Any, engage: bool | None) -> None:
    answer = _engage(value)
    assert (answer.engage, answer.attach, answer.failure) == (engage, (), None)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        pytest.param(True, r"engage returned a bool \(True\) — return \{'engage'", id="bool"),
        pytest.param({"attach": []}, r"'engage': None — it must be True or False", id="no-engage"),
        pytest.param({"engage": "yes"}, r"'engage': a str \('yes'\)", id="engage-str"),
        pytest.param(
            {"engage": True, "attachments": []},
            r"the key 'attachments' — did you mean 'attach'\?",
            id="misspelt",
        ),
    ],
)
def test_a_wrong_verdict_decides_nothing(value: Any, pattern: str) -> None:
    answer = _engage(value)
    assert answer.engage is None
    assert answer.failure is not None
    assert answer.failure.reason.endswith("the chat rules decide alone and nothing is attached")
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


def test_attach_that_is_not_a_list_drops_it_whole_and_keeps_the_verdict() -> None:
    answer = _engage({"engage": True, "attach": {"context": "ticket"}})
    assert answer.engage is True
    assert answer.attach == ()
    assert answer.dropped == (
        "constitution/desk.engage.py: 'attach' is a dict with 'context', not a list of {'context', 'entity'?} entries — nothing attached",
    )


def test_merged_messages_carry_every_attach_once() -> None:
    first = EngageAnswer(engage=True, attach=(ReachEntry(context="ticket", entity="T-1"),))
    second = EngageAnswer(
        engage=False,
        attach=(ReachEntry(context="ticket", entity="T-1"), ReachEntry(context="kb")),
    )
    assert merged_attach([first, EngageAnswer(), second]) == (
        ReachEntry(context="ticket", entity="T-1"),
        ReachEntry(context="kb"),
    )


GATE = GateCall(hook="hook:escalate", path="features/desk/escalate.hook.py", event={}, reach=())


@pytest.mark.parametrize(
    ("value", "reach", "entity"),
    [
        pytest.param(None, None, None, id="none-keeps-the-hook-reach"),
        pytest.param({}, None, None, id="empty-keeps-the-hook-reach"),
        pytest.param({"entity": "T-9"}, None, "T-9", id="entity"),
        pytest.param({"reach": []}, (), None, id="empty-reach"),
        pytest.param(
            {"reach": [{"context": "listen"}, {"context": "ticket", "entity": "T-2"}]},
            (ReachEntry(context="listen"), ReachEntry(context="ticket", entity="T-2")),
            None,
            id="reach",
        ),
        pytest.param(
            {"reach": [{"context": "ticket"}], "entity": "T-3"},
            (ReachEntry(context="ticket"),),
            "T-3",
            id="reach-and-entity",
        ),
    ],
)
def test_gate_answers(value: Any, reach: tuple[ReachEntry, ...] | None, entity: str | None) -> None:
    answer = gate_answer(GATE, Reply(value=value))
    assert (answer.reach, answer.entity, answer.failure) == (reach, entity, None)


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        pytest.param(
            "listen", r"the gate returned a str \('listen'\) — return \{'reach'", id="string"
        ),
        pytest.param(
            {"reach": "listen"}, r"'reach': a str \('listen'\) — it is a list", id="reach-string"
        ),
        pytest.param(
            {"reach": [{"context": ""}]},
            r"reach entry 1: an entry without a context id",
            id="empty-context",
        ),
        pytest.param({"entity": ""}, r"an entity key of 0 characters", id="empty-entity"),
        pytest.param({"reech": []}, r"the key 'reech' — did you mean 'reach'\?", id="misspelt"),
    ],
)
def test_a_wrong_gate_answer_fails_the_fire(value: Any, pattern: str) -> None:
    answer = gate_answer(GATE, Reply(value=value, line=5))
    assert answer.failure is not None
    assert answer.failure.line == 5
    assert answer.failure.reason.endswith("until then every fire of the hook fails")
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param(None, "None", id="none"),
        pytest.param(2.5, "a float (2.5)", id="float"),
        pytest.param("x" * 50, f"a str ('{'x' * 37}...')", id="long-str"),
        pytest.param([], "a list of 0 items", id="empty-list"),
        pytest.param({}, "an empty dict", id="empty-dict"),
        pytest.param(object(), "a object", id="other"),
    ],
)
def test_values_are_described_briefly(value: Any, said: str) -> None:
    assert described(value) == said
