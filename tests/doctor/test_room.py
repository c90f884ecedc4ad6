"""Doctor finds, from the files alone, a role whose always-on contexts or catalog overflow."""

from __future__ import annotations

from pathlib import Path

from keel.brain import load_brain
from keel.brain.scaffold import scaffold_files
from keel.doctor import run_doctor

ROLE = "---\nagent: cli\ncapabilities: [context:read]\ncontexts: [{ids}]\n{budget}---\nP.\n"


def role(files: dict[str, str], budget: str = "") -> str:
    """A role admitting exactly the contexts of `files` (not the scaffold's own)."""
    ids = ", ".join(p.rsplit("/", 1)[-1].removesuffix(".context.md") for p in files)
    return ROLE.format(ids=ids, budget=budget)


def brain_with(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "brain"
    for rel, text in {**dict(scaffold_files("t")), **files}.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")
    return root


def room(root: Path) -> list[str]:
    report = run_doctor(load_brain(root), schema=None)
    return [f.message for f in report.findings if f.check.startswith("role.") and "over" in f.check]


def always(n: int, chars: int = 500) -> dict[str, str]:
    return {
        f"features/f/a{i}.context.md": f"---\nwhen: [always]\nchars: {chars}\n---\nRule {i}.\n"
        for i in range(n)
    }


def test_more_always_on_contexts_than_max_active_is_found(tmp_path: Path) -> None:
    root = brain_with(tmp_path, {**always(5), "features/f/coder.agent.md": role(always(5))})
    (message,) = room(root)
    assert message.startswith(
        "role 'coder' admits 5 always-on contexts, but a turn carries at most 3 (maxActive): "
        "2 of them are stubbed on every turn"
    )


def test_always_on_characters_over_turn_chars_are_found(tmp_path: Path) -> None:
    budget = "contexts_budget:\n  maxActive: 9\n  turnChars: 1000\n"
    root = brain_with(tmp_path, {**always(3), "features/f/coder.agent.md": role(always(3), budget)})
    (message,) = room(root)
    assert message.startswith(
        "role 'coder' admits always-on contexts of 1,500 characters together, but a turn's "
        "contexts may use 1,000 (turnChars)"
    )


def test_a_catalog_over_its_budget_is_found(tmp_path: Path) -> None:
    asks = {
        f"features/f/k{i}.context.md": "---\nwhen: [ask]\ndescription: When the task touches "
        f"area {i} of the storefront, its handlers, tests and migrations, read this.\n---\nK.\n"
        for i in range(60)
    }
    root = brain_with(tmp_path, {**asks, "features/f/coder.agent.md": role(asks)})
    (message,) = room(root)
    assert message.startswith("role 'coder''s catalog of 60 ask contexts is about ")
    assert "over its context.catalog budget of 800 (" in message
    # Room given in the role: nothing to find.
    budget = "sections:\n  context.catalog: 5000\n"
    (root / "features/f/coder.agent.md").write_text(role(asks, budget), encoding="utf-8")
    assert room(root) == []


def test_a_role_with_room_has_nothing_to_find(tmp_path: Path) -> None:
    root = brain_with(tmp_path, {**always(3), "features/f/coder.agent.md": role(always(3))})
    assert room(root) == []
