"""Specs as JSON values and back: every spec survives the trip, and nothing else gets in."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keel.brain import Brain
from keel.brain.constitution import Access, ChatRule, FailedRule, Manifest, Tenancy
from keel.brain.spec_json import Unreadable, plain, reader
from keel.brain.specs import (
    WHEN_WORDS,
    ApprovalPolicy,
    ContextsBudget,
    ContextSpec,
    ModelSpec,
    RoleSpec,
    Skip,
    ViewRef,
)


def trip(value: Any) -> Any:
    """`value` stored as JSON text and read back as its own type."""
    return reader(type(value))(json.loads(json.dumps(plain(value))))


def test_every_spec_of_the_reference_brain_survives(reference_brain: Brain) -> None:
    brain = reference_brain
    specs = [
        brain.manifest,
        brain.access,
        *brain.features.values(),
        *brain.contexts.values(),
        *brain.roles.values(),
        *brain.entities.values(),
        *brain.skills.values(),
        *brain.state_sql,
    ]
    assert len(specs) > 50
    for spec in specs:
        assert trip(spec) == spec


def test_access_is_read_with_its_look_ups_built_again() -> None:
    rule = ChatRule(bot="nova", scope="tg:chat:-1", role="desk", contexts={"client": "acme"})
    failed = FailedRule(
        bot="nova", scope="dm", chat=None, problems=(Skip(path="a", reason="bad", line=3),)
    )
    access = Access.of("constitution/access.yaml", (rule,), (failed,))
    back = trip(access)
    assert back == access
    assert back.rule_for("nova", "tg:chat:-1") == rule
    assert back.refusal("nova", "elsewhere", dm=True) is not None
    broken = Access.failed_whole("constitution/access.yaml", Skip(path="x", reason="broken"))
    assert trip(broken) == broken


def test_a_manifest_with_every_setting_survives() -> None:
    manifest = Manifest(
        path="constitution/MANIFEST.yaml",
        name="shop",
        contexts=ContextsBudget(chars=10, max_active=2, turn_chars=100, keep=1),
        content_probe_seconds=0.5,
        model=ModelSpec(name="m", window=1000, output_reserve=10, input_allocation=500),
        sections=(("history", 40), ("state", 10)),
        tenancy=Tenancy(context="client", column="client_id"),
        approvals=ApprovalPolicy(
            decisions=(("dangerous", "required"), ("context:bind", "none")),
            timeout=timedelta(days=1, seconds=3, microseconds=7),
        ),
        broken=Skip(path="constitution/MANIFEST.yaml", reason="bad", line=2),
    )
    assert trip(manifest) == manifest


texts = st.text(max_size=20)
optional_ints = st.none() | st.integers(min_value=0, max_value=10**9)


@given(
    st.builds(
        ContextSpec,
        id=texts,
        feature=texts,
        path=texts,
        dir=st.lists(texts, max_size=3).map(tuple),
        when=st.frozensets(st.sampled_from(WHEN_WORDS)),
        instructions=st.text(),
        description=st.none() | texts,
        entity=st.none() | texts,
        data=st.lists(st.builds(ViewRef, view=texts, by=st.none() | texts), max_size=3).map(tuple),
        chars=optional_ints,
        keep=optional_ints,
        code_timeout_ms=optional_ints,
        code_path=st.none() | texts,
    )
)
def test_any_context_survives(spec: ContextSpec) -> None:
    assert trip(spec) == spec


@given(
    st.builds(
        RoleSpec,
        id=texts,
        feature=texts,
        path=texts,
        persona=st.text(),
        contexts=st.none() | st.lists(texts, max_size=3).map(tuple),
        capabilities=st.lists(texts, max_size=3).map(tuple),
        agent=st.sampled_from(["api", "cli"]),
        sections=st.lists(st.tuples(texts, st.integers()), max_size=3).map(tuple),
    )
)
def test_any_role_survives(spec: RoleSpec) -> None:
    assert trip(spec) == spec


CONTEXT = plain(
    ContextSpec(
        id="ticket",
        feature="support",
        path="features/support/ticket.context.md",
        dir=(),
        when=frozenset({"ask"}),
        instructions="Answer the ticket.",
        chars=300,
    )
)


def changed(**fields: Any) -> dict[str, Any]:
    return {**CONTEXT, **fields}


@pytest.mark.parametrize(
    ("data", "said"),
    [
        pytest.param(
            {k: v for k, v in CONTEXT.items() if k != "chars"},
            "not a ContextSpec",
            id="missing-field",
        ),
        pytest.param(changed(run="rm -rf /"), "not a ContextSpec", id="unknown-field"),
        pytest.param(changed(chars=True), "True is not a int", id="bool-for-int"),
        pytest.param(changed(chars="300"), "'300' is not a int", id="text-for-int"),
        pytest.param(changed(chars=300.0), "300.0 is not a int", id="float-for-int"),
        pytest.param(changed(when=["never"]), "'never' is not one of", id="unknown-word"),
        pytest.param(changed(when="ask"), "'ask' is not a list", id="text-for-list"),
        pytest.param(changed(dir=None), "None is not a list", id="null-for-tuple"),
        pytest.param(changed(instructions=["a"]), "is not a str", id="list-for-text"),
        pytest.param(["ticket"], "not a ContextSpec", id="not-an-object"),
        pytest.param(
            changed(data=[{"view": "v", "by": None, "as": "x"}]), "not a ViewRef", id="nested"
        ),
    ],
)
def test_values_that_are_not_the_spec_are_refused(data: Any, said: str) -> None:
    with pytest.raises(Unreadable, match=said):
        reader(ContextSpec)(data)


@pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(1, id="int-for-float"),
        pytest.param(math.nan, id="nan"),
        pytest.param(math.inf, id="infinity"),
    ],
)
def test_a_float_must_be_a_finite_float(seconds: Any) -> None:
    data = {**plain(Manifest()), "content_probe_seconds": seconds}
    with pytest.raises(Unreadable, match="is not a float"):
        reader(Manifest)(data)


def test_a_mapping_with_a_key_twice_is_refused() -> None:
    data = {**plain(ChatRule(bot="b", scope="c")), "contexts": [["a", None], ["a", "x"]]}
    with pytest.raises(Unreadable, match="a key appears twice"):
        reader(ChatRule)(data)


def test_a_duration_out_of_range_is_refused() -> None:
    data = {**plain(ApprovalPolicy()), "timeout": [10**10, 0, 0]}
    with pytest.raises(Unreadable, match="is not a duration"):
        reader(ApprovalPolicy)(data)


def test_plain_refuses_what_it_cannot_store() -> None:
    with pytest.raises(TypeError, match="cannot store"):
        plain(ViewRef(view={"a"}))  # type: ignore[arg-type]
