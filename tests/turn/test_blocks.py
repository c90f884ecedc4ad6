"""A code section with no room left names the setting that gives its context more."""

from __future__ import annotations

from dataclasses import replace

import pytest

from keel.brain.constitution import DEFAULT_CHARS, Manifest
from keel.brain.specs import ContextsBudget, ContextSpec, RoleSpec
from keel.budget.blocks import room_advice
from keel.budget.render import render_block

CONTEXT = ContextSpec(
    id="big",
    feature="f",
    path="features/f/big.context.md",
    dir=("features", "f"),
    when=frozenset({"ask"}),
    instructions="The big rules.",
)
ROLE = RoleSpec(id="desk", feature="f", path="features/f/desk.agent.md", persona="The desk.")
MANIFEST = Manifest(path="constitution/MANIFEST.yaml")


@pytest.mark.parametrize(
    ("chars", "role", "manifest", "advice"),
    [
        pytest.param(
            600,
            ContextsBudget(chars=900),
            ContextsBudget(chars=1200),
            "raise chars: 600 of features/f/big.context.md",
            id="the-context",
        ),
        pytest.param(
            None,
            ContextsBudget(chars=900),
            ContextsBudget(chars=1200),
            "raise contexts_budget.chars: 900 of features/f/desk.agent.md",
            id="the-role",
        ),
        pytest.param(
            None,
            ContextsBudget(),
            ContextsBudget(chars=1200),
            "raise contexts.chars: 1200 of constitution/MANIFEST.yaml",
            id="the-manifest",
        ),
        pytest.param(
            None,
            ContextsBudget(),
            ContextsBudget(),
            f"set chars: in features/f/big.context.md (it is {DEFAULT_CHARS} by default)",
            id="the-default",
        ),
    ],
)
def test_the_advice_names_the_tier_that_set_chars(
    chars: int | None, role: ContextsBudget, manifest: ContextsBudget, advice: str
) -> None:
    context = replace(CONTEXT, chars=chars)
    spec = replace(ROLE, contexts_budget=role)
    assert room_advice(context, spec, replace(MANIFEST, contexts=manifest)) == advice


def test_the_stub_of_a_section_past_chars_carries_the_advice() -> None:
    block = render_block(
        context="big",
        entity=None,
        instructions="The big rules.",
        views=(),
        chars=300,
        sections=(("small", "fits"), ("log", "x" * 5000)),
        more_room="raise chars: 300 of features/f/big.context.md",
    )
    assert block is not None
    assert '<section name="small">\nfits\n</section>' in block.text
    assert (
        '<section name="log">not shown: no room left in this context — raise chars: 300 of '
        "features/f/big.context.md</section>"
    ) in block.text
    assert block.chars <= 300
