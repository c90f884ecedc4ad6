"""The reference brain's pipelines, run in the brain-code workers with a recording parent.

Each scenario's `<id>.pipeline.py` runs as `keel scenario` would run it; the parent's side
of its ctx calls is a plain function that records each call and answers it, so what is
checked is the pipeline's own order of calls and what it passes in them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keel.brain import Brain, load_brain
from keel.code import CodeRunner, PipelineAnswer, PipelineCall

BRAIN_DIR = Path(__file__).resolve().parents[2] / "examples" / "brain"
STARTED = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
PRACTICES = ("knm", "listen", "write", "read")


class Parent:
    """Records each ctx call and answers it: the agent's text, a card, a decision."""

    def __init__(self, *, approve: bool = True) -> None:
        self.approve = approve
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, args: Mapping[str, Any]) -> Any:
        self.calls.append((name, dict(args)))
        if name == "run_agent":
            return {"text": f"Draft by {args['agent']}"}
        if name == "request_approval":
            return "card-1"
        if name == "await_approval":
            return self.approve
        return {"ok": True}


@pytest.fixture(scope="module")
def brain() -> Brain:
    return load_brain(BRAIN_DIR)


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    with CodeRunner(BRAIN_DIR) as running:
        yield running


def run(
    brain: Brain, runner: CodeRunner, scenario: str, vars: Mapping[str, Any], parent: Parent
) -> PipelineAnswer:
    spec = brain.entity("scenario", scenario)
    assert spec is not None
    assert spec.code_path is not None, f"{scenario} has no pipeline"
    call = PipelineCall(
        scenario=scenario, path=spec.code_path, vars=vars, run_id="run-1", started_at=STARTED
    )
    return runner.run_pipeline(call, parent)


def test_every_scenario_has_its_pipeline_and_speaks_somewhere(brain: Brain) -> None:
    scenarios = [e for e in brain.entities.values() if e.kind == "scenario"]
    assert len(scenarios) == 5
    for spec in scenarios:
        assert spec.code_path == spec.path.replace(".scenario.md", ".pipeline.py")
        assert spec.bot is not None
        assert spec.chat is not None


def test_first_touch_drafts_keyed_asks_the_owner_sends_keyed_then_binds(
    brain: Brain, runner: CodeRunner
) -> None:
    parent = Parent()
    vars = {"prospect": "p_913", "chat": "tg:user:5513001"}
    answer = run(brain, runner, "first-touch", vars, parent)
    assert answer.failure is None, answer.failure
    assert answer.value == {"sent": True, "prospect": "p_913"}
    assert [name for name, _ in parent.calls] == [
        "run_agent",
        "request_approval",
        "await_approval",
        "send",
        "bind_context",
    ]
    agent, card, wait, send, bind = (args for _, args in parent.calls)
    assert (agent["agent"], agent["entity"], agent["reach"]) == ("sdr", "p_913", None)
    owner = brain.entity("scenario", "first-touch")
    assert owner is not None
    assert card["chat"] == owner.chat
    assert "Draft by sdr" in card["text"]
    assert wait == {"card": "card-1"}
    assert send == {"chat": "tg:user:5513001", "text": "Draft by sdr", "about": {"entity": "p_913"}}
    assert bind == {
        "context": "prospect",
        "entity": "p_913",
        "chat": "tg:user:5513001",
        "thread": None,
        "bot": None,
    }
    assert brain.contexts["prospect"].keyed


def test_first_touch_sends_nothing_the_owner_did_not_approve(
    brain: Brain, runner: CodeRunner
) -> None:
    parent = Parent(approve=False)
    answer = run(brain, runner, "first-touch", {"prospect": "p_913", "chat": "c"}, parent)
    assert answer.value == {"sent": False, "prospect": "p_913"}
    assert [name for name, _ in parent.calls] == ["run_agent", "request_approval", "await_approval"]


def test_first_touch_without_its_vars_fails_for_good(brain: Brain, runner: CodeRunner) -> None:
    parent = Parent()
    answer = run(brain, runner, "first-touch", {"prospect": "p_913"}, parent)
    assert answer.terminal
    assert answer.failure is not None
    assert "first-touch needs vars" in answer.failure.reason
    assert parent.calls == []


@pytest.mark.parametrize("practice", PRACTICES)
def test_a_dutch_practice_posts_the_coachs_task_to_the_learner(
    brain: Brain, runner: CodeRunner, practice: str
) -> None:
    parent = Parent()
    answer = run(brain, runner, f"{practice}-practice", {}, parent)
    assert answer.failure is None, answer.failure
    (agent_name, agent), (send_name, send) = parent.calls
    assert (agent_name, send_name) == ("run_agent", "send")
    assert (agent["agent"], agent["entity"], agent["reach"]) == ("dutch-coach", None, None)
    scenario = brain.entity("scenario", f"{practice}-practice")
    assert scenario is not None
    assert send == {"chat": scenario.chat, "text": "Draft by dutch-coach", "about": None}
