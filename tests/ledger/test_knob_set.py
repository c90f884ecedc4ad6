"""`--set KEY=VALUE`: knobs checked like the brain's files, applied to a new snapshot."""

from __future__ import annotations

import pytest

from keel.brain import Brain
from keel.brain.knobs import SectionBudgets, context_chars, model_limits, turn_knobs
from keel.errors import UsageError
from keel.ledger import apply_overrides, parse_overrides


def changed(brain: Brain, *settings: str) -> Brain:
    return apply_overrides(brain, parse_overrides(settings))


def test_each_tier_is_changed_where_the_files_set_it(reference_brain: Brain) -> None:
    brain = changed(
        reference_brain,
        "contexts.turnChars=20000",
        "contexts.maxActive=5",
        "context.client.chars=2000",
        "role.support.contexts_budget.maxActive=1",
        "role.support.sections.history=100",
        "role.support.model.output_reserve=123",
        "sections.render.support_queue=50",
        "model.window=90000",
        "state.rows=4",
    )
    coach, support = brain.roles["coach"], brain.roles["support"]
    assert turn_knobs(coach, brain.manifest).turn_chars == 20000
    assert turn_knobs(coach, brain.manifest).max_active == 5
    assert turn_knobs(support, brain.manifest).max_active == 1
    assert turn_knobs(coach, brain.manifest).rows == 4
    assert context_chars(brain.contexts["client"], coach, brain.manifest) == 2000
    assert context_chars(brain.contexts["policy"], coach, brain.manifest) == 3000
    assert SectionBudgets.of(support, brain.manifest)("history") == 100
    assert SectionBudgets.of(coach, brain.manifest)("history") == 4000
    assert SectionBudgets.of(coach, brain.manifest)("render.support_queue") == 50
    assert model_limits(coach, brain.manifest).window == 90000
    assert model_limits(support, brain.manifest).output_reserve == 123
    assert model_limits(coach, brain.manifest).output_reserve == 8000
    # The brain it was made from is left as it was.
    assert turn_knobs(coach, reference_brain.manifest).max_active == 3
    assert reference_brain.contexts["client"].chars is None


def test_a_later_setting_of_the_same_knob_wins(reference_brain: Brain) -> None:
    brain = changed(reference_brain, "contexts.maxActive=5", "contexts.maxActive=2")
    assert turn_knobs(brain.roles["coach"], brain.manifest).max_active == 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("contexts.maxActive", r"write KEY=VALUE", id="no-value"),
        pytest.param(
            "contexts.maxActive=many", r"the value 'many' is not a whole number", id="not-a-number"
        ),
        pytest.param("contexts.turnChars=0", r"should be greater than", id="below-its-range"),
        pytest.param("state.rows=-1", r"should be greater than", id="negative-rows"),
        pytest.param(
            "contexts.maxactive=3",
            r"unknown knob 'contexts.maxactive' — write contexts\.<chars\|maxActive\|turnChars>",
            id="misspelt",
        ),
        pytest.param(
            "context.client.keep=5", r"keep changes which links later turns hold", id="keep"
        ),
        pytest.param(
            "contexts.keep=5", r"keep changes which links later turns hold", id="manifest-keep"
        ),
        pytest.param("role.support.model.name=7", r"unknown knob", id="model-name"),
    ],
)
def test_a_bad_setting_says_what_to_write(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=rf"--set '{text}'"):
        parse_overrides([text])
    with pytest.raises(UsageError, match=problem):
        parse_overrides([text])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "context.cliant.chars=100",
            r"no context 'cliant' — did you mean 'client'\?",
            id="context",
        ),
        pytest.param(
            "role.suport.contexts_budget.maxActive=1",
            r"no role 'suport' — did you mean 'support'\?",
            id="role",
        ),
    ],
)
def test_a_setting_for_something_the_brain_lacks_names_the_nearest(
    reference_brain: Brain, text: str, problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        changed(reference_brain, text)
