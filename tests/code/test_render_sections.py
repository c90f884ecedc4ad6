"""What a render costs Keel's own process grows with the sections it returns, in a straight
line, and they are capped: a render past the cap fails closed like any wrong shape."""

from __future__ import annotations

from pathlib import Path

from keel.brain.limits import MAX_RENDER_SECTIONS
from keel.code import CodeRunner
from keel.code.answers import render_answer
from keel.code.values import RenderCall, Reply
from tests.code.support import guarded, write_code

PATH = "features/desk/ticket.context.py"
MANY = 100_000


class Key(str):
    """A section key that counts how often the checks compare or hash it."""

    looks = 0

    def __eq__(self, other: object) -> bool:
        Key.looks += 1
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        Key.looks += 1
        return str.__hash__(self)


def _sections(count: int, key: type[str] = str) -> list[dict[str, str]]:
    return [{"key": key(f"s{i}"), "text": "x"} for i in range(count)]


def _call() -> RenderCall:
    return RenderCall(context="ticket", path=PATH, entity="T-481", views=("ticket_card",))


def test_a_render_past_the_cap_fails_closed_naming_the_cap_and_the_file() -> None:
    with guarded():
        answer = render_answer(_call(), Reply(value=_sections(MANY), line=7))
    assert answer.sections == ()
    assert answer.failure is not None
    assert str(answer.failure) == (
        f"{PATH}:7: render returned 100,000 sections, more than the limit of "
        f"{MAX_RENDER_SECTIONS} (docs/limits.md) — return fewer: join small ones into one "
        "section's text; until then it renders nothing"
    )


def test_a_render_at_the_cap_renders_every_section() -> None:
    answer = render_answer(_call(), Reply(value=_sections(MAX_RENDER_SECTIONS)))
    assert answer.failure is None
    assert len(answer.sections) == MAX_RENDER_SECTIONS


def test_checking_the_keys_costs_the_same_for_each_section() -> None:
    """Each section's key is looked at a fixed number of times, however many came before:
    doubling the sections doubles the work (a check against every earlier key would
    quadruple it)."""

    def looks(count: int) -> int:
        Key.looks = 0
        answer = render_answer(_call(), Reply(value=_sections(count, Key)))
        assert answer.failure is None
        return Key.looks

    quarter, half, whole = (looks(MAX_RENDER_SECTIONS * n // 4) for n in (1, 2, 4))
    assert whole - half == 2 * (half - quarter)


def test_a_real_render_of_many_sections_fails_closed_and_the_worker_goes_on(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(
        code_root,
        "from keel.code import define_context\n\n"
        "def render(entity, ctx):\n"
        f"    return [{{'key': f's{{i}}', 'text': 'x'}} for i in range({MANY})]\n\n"
        "context = define_context(render=render)\n",
    )
    with guarded():
        (answer,) = runner.render_all([RenderCall(context="ticket", path=path, entity="T-1")])
    assert answer.failure is not None
    assert answer.failure.kind == "shape"
    assert f"render returned 100,000 sections, more than the limit of {MAX_RENDER_SECTIONS}" in (
        str(answer.failure)
    )
    assert str(answer.failure).startswith(f"{path}:3: "), "the file and line of render"
    fine = write_code(
        code_root,
        "from keel.code import define_context\n\n"
        "def render(entity, ctx):\n    return [{'key': 'sla', 'text': entity}]\n\n"
        "context = define_context(render=render)\n",
    )
    (after,) = runner.render_all([RenderCall(context="ticket", path=fine, entity="T-1")])
    assert (after.failure, [s.text for s in after.sections]) == (None, ["T-1"])
