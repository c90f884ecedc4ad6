"""A hook's gate decides what one fire is a run of: its reach, its key — or the fire fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from keel.brain import Brain, load_brain
from keel.brain.specs import ReachEntry
from keel.code import CodeRunner, fire_gate
from tests.code.support import SHORT_MS, write_code

FILES = {
    "features/desk/desk.agent.md": "---\ncontexts: ['*']\n---\nThe desk.\n",
    "features/desk/ticket.context.md": "---\nentity: ticket id\nwhen: [run, reply]\n---\nA ticket.\n",
    "features/desk/customer.context.md": "---\nentity: customer id\nwhen: [run]\n---\nA customer.\n",
    "features/desk/faq.context.md": "---\nwhen: [run]\n---\nThe FAQ.\n",
    "features/desk/escalate.hook.md": "---\nevent: ticket.escalated\nagent: desk\nreach: [ticket, faq]\n---\nEscalate.\n",
    "features/desk/triage.hook.md": "---\nevent: ticket.new\nagent: desk\n---\nTriage.\n",
    "features/desk/plain.hook.md": "---\nevent: ticket.closed\nagent: desk\n---\nClose.\n",
}
GATE = "from keel.code import define_gate\n\n\ndef gate(event, ctx):\n    {body}\n\n\nhook = define_gate(gate)\n"
ESCALATE = "features/desk/escalate.hook.py"
TRIAGE = "features/desk/triage.hook.py"


@pytest.fixture(scope="module")
def brain(code_root: Path) -> Brain:
    for rel, text in FILES.items():
        write_code(code_root, text, path=rel)
    for path in (ESCALATE, TRIAGE):
        write_code(code_root, GATE.format(body="return None"), path=path)
    loaded = load_brain(code_root)
    assert not loaded.skips
    return loaded


def _gate(root: Path, path: str, body: str) -> None:
    write_code(root, GATE.format(body=body), path=path)


@pytest.mark.parametrize(
    ("body", "reach", "entity"),
    [
        pytest.param(
            "return None",
            (ReachEntry(context="ticket"), ReachEntry(context="faq")),
            None,
            id="own-reach",
        ),
        pytest.param(
            "return {'entity': event['ticket_id']}",
            (ReachEntry(context="ticket", entity="T-9"), ReachEntry(context="faq")),
            "T-9",
            id="entity-keys-the-one-keyed-context",
        ),
        pytest.param(
            "return {'reach': [{'context': 'faq'}]}", (ReachEntry(context="faq"),), None, id="reach"
        ),
        pytest.param(
            "return {'reach': [{'context': e.context} for e in ctx.reach][:1], 'entity': event.ticket_id}",
            (ReachEntry(context="ticket", entity="T-9"),),
            "T-9",
            id="reach-from-ctx-and-entity",
        ),
        pytest.param(
            "return {'reach': [{'context': 'customer', 'entity': 'c-1'}, {'context': 'faq'}]}",
            (ReachEntry(context="customer", entity="c-1"), ReachEntry(context="faq")),
            None,
            id="keyed-reach",
        ),
    ],
)
def test_a_gate_decides_the_fire(
    runner: CodeRunner, brain: Brain, body: str, reach: tuple[ReachEntry, ...], entity: str | None
) -> None:
    _gate(brain.root, ESCALATE, body)
    result = fire_gate(runner, brain, brain.entities["hook:escalate"], {"ticket_id": "T-9"})
    assert (result.failure, result.reach, result.entity) == (None, reach, entity)


@pytest.mark.parametrize(
    ("body", "kind", "pattern"),
    [
        pytest.param(
            "raise KeyError('ticket_id')",
            "raise",
            "the gate raised KeyError: 'ticket_id'",
            id="raises",
        ),
        pytest.param("return 'faq'", "shape", "the gate returned a str ('faq')", id="a-string"),
        pytest.param(
            "return {'reach': [{'context': 'faqs'}]}",
            "shape",
            "names context 'faqs', which is not in this brain — did you mean 'faq'?",
            id="unknown-context",
        ),
        pytest.param(
            "return {'reach': [{'context': 'faq', 'entity': 'q-1'}]}",
            "shape",
            "gives context 'faq' the key 'q-1', but that context names no entity",
            id="key-on-unkeyed",
        ),
        pytest.param(
            "return {'reach': [{'context': 'faq'}], 'entity': 'T-1'}",
            "shape",
            "the fire's reach ('faq') has 0 keyed contexts without a key (none)",
            id="entity-no-keyed-context",
        ),
    ],
)
def test_a_gate_that_fails_fails_the_fire(
    runner: CodeRunner, brain: Brain, body: str, kind: str, pattern: str
) -> None:
    _gate(brain.root, ESCALATE, body)
    result = fire_gate(runner, brain, brain.entities["hook:escalate"], {"ticket_id": "T-9"})
    assert result.reach == ()
    assert result.failure is not None
    assert result.failure.kind == kind
    assert result.failure.file == ESCALATE
    assert pattern in result.failure.reason
    assert result.failure.reason.endswith("until then every fire of the hook fails")


def test_an_entity_the_layout_reach_cannot_take_names_its_keyed_contexts(
    runner: CodeRunner, brain: Brain
) -> None:
    _gate(brain.root, TRIAGE, "return {'entity': 'T-1'}")
    result = fire_gate(runner, brain, brain.entities["hook:triage"], {})
    assert result.failure is not None
    assert result.failure.line == 4
    assert "has 2 keyed contexts without a key ('customer', 'ticket')" in result.failure.reason
    assert "naming each key instead" in result.failure.reason


def test_a_gate_that_hangs_fails_the_fire_in_time(runner: CodeRunner, brain: Brain) -> None:
    _gate(brain.root, ESCALATE, "while True:\n        pass")
    result = fire_gate(runner, brain, brain.entities["hook:escalate"], {}, timeout_ms=SHORT_MS)
    assert result.failure is not None
    assert result.failure.kind == "timeout"
    assert result.failure.reason.startswith(f"the gate ran past its {SHORT_MS} ms timeout")


def test_a_hook_with_no_gate_fires_with_its_own_reach(runner: CodeRunner, brain: Brain) -> None:
    result = fire_gate(runner, brain, brain.entities["hook:plain"], {"anything": 1})
    assert result.failure is None
    assert {r.context for r in result.reach} == {"ticket", "customer", "faq"}
    assert result.to_json()["hook"] == "hook:plain"
