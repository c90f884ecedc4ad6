"""Assembly: section order, clipping with notices, warnings, history, the fit check."""

from __future__ import annotations

from typing import Any

import pytest

from keel.assemble.assembler import AssemblyInputs, assemble
from keel.assemble.fit import check_request, ensure_fits, payload_messages
from keel.assemble.row_cuts import RenderInput
from keel.assemble.values import (
    Assembly,
    Message,
    ModelStep,
    ToolCall,
    ToolResult,
    Transcript,
)
from keel.brain.knobs import ModelLimits, SectionBudgets
from keel.errors import FitOverflow
from keel.tokens.estimate import Estimator
from keel.tokens.exact import TiktokenCounter
from keel.tools import CONTEXT_OPEN
from tests.tokens.corpus import rank_dir

COUNTER = Estimator()
ROOMY = ModelLimits(name="m", window=200_000, output_reserve=4_000, input_allocation=150_000)


def view(name: str, rows: int) -> RenderInput:
    return RenderInput(
        view=name,
        header=f'<agent-state view="{name}">\nid | status | note',
        rows=tuple(f"{name}-{i:03d} | open | a note about row {i} of {name}" for i in range(rows)),
        footer="</agent-state>",
    )


def chat(n: int) -> tuple[Message, ...]:
    return tuple(
        Message(role="user" if i % 2 == 0 else "assistant", text=f"message {i}: " + "word " * 30)
        for i in range(n)
    )


def inputs(**kw: object) -> AssemblyInputs:
    base: dict[str, object] = {
        "current": "What is the status of my order?",
        "time": "Now: 2026-11-29 19:00 UTC (Sunday).",
        "identity": "You answer as bot 'desk', in the role 'support'.",
        "rules": "Follow the feature contexts.",
        "prompt": "You are the support desk.",
        "skills": ("Be brief.", "Quote numbers exactly."),
        "catalog": "Feature contexts you can open with context_open:\n- policy: returns",
        "tools": (CONTEXT_OPEN,),
        "renders": (view("queue", 5),),
        "history": chat(4),
        "contexts": (("context.ticket@T-1", '<context name="ticket">x</context>'),),
    }
    base.update(kw)
    return AssemblyInputs(**base)  # type: ignore[arg-type]


def build(
    budgets: dict[str, int] | None = None, limits: ModelLimits = ROOMY, **kw: object
) -> Assembly:
    return assemble(
        inputs(**kw), counter=COUNTER, budgets=SectionBudgets(role=budgets or {}), limits=limits
    )


def test_sections_come_in_the_documented_order() -> None:
    ids = [s.id for s in build().sections]
    assert ids == [
        "sys.time",
        "identity",
        "rules",
        "prompt",
        "skill.0",
        "skill.1",
        "context.catalog",
        "tool.context_open",
        "render.queue",
        "history",
        "context.ticket@T-1",
        "current",
    ]


def test_each_section_records_text_budget_and_measured_size() -> None:
    for section in build().sections:
        assert section.used_tokens > 0
        assert section.budget_tokens is not None
        assert section.used_tokens == COUNTER.count(section.text) or section.id in (
            "render.queue",
            "history",
        )


def test_feature_contexts_ride_the_tail_never_the_system_prompt() -> None:
    assembly = build()
    assert "<context" not in assembly.system_text
    assert "<context" not in assembly.state_text
    assert assembly.tail_text.startswith('<context name="ticket">')
    assert assembly.tail_text.endswith("What is the status of my order?")


def test_a_render_over_budget_is_clipped_by_rows_with_a_notice() -> None:
    assembly = build({"render.queue": 120}, renders=(view("queue", 40),))
    render = next(s for s in assembly.sections if s.id == "render.queue")
    assert render.clipped
    assert render.used_tokens <= 120
    shown = render.text.count("| open |")
    assert 0 < shown < 40
    assert f"({40 - shown} more rows not shown)\n</agent-state>" in render.text
    assert render.warnings == (f"{40 - shown} rows not shown — raise sections.render.queue",)
    assert render.text.endswith("</agent-state>")


def test_other_sections_over_budget_warn_and_are_not_clipped() -> None:
    long_prompt = "You are the support desk. " * 100
    assembly = build({"prompt": 50}, prompt=long_prompt)
    prompt = next(s for s in assembly.sections if s.id == "prompt")
    assert prompt.text == long_prompt
    assert not prompt.clipped
    assert prompt.warnings
    assert "over its budget of 50" in prompt.warnings[0]


def test_history_keeps_the_newest_within_budget_and_counts_what_it_left_out() -> None:
    assembly = build({"history": 200}, history=chat(30))
    history = next(s for s in assembly.sections if s.id == "history")
    kept = history.messages
    assert kept[0].text.startswith("[")
    assert "earlier messages of this conversation not shown" in kept[0].text
    left_out = int(kept[0].text[1:].split()[0])
    assert left_out + len(kept) - 1 == 30
    assert kept[-1].text.startswith("message 29:"), "the newest message is kept"
    assert history.used_tokens <= 200


def test_the_newest_exchange_survives_any_history_budget() -> None:
    assembly = build({"history": 1}, history=chat(10))
    history = next(s for s in assembly.sections if s.id == "history")
    assert [m.text.split(":")[0] for m in history.messages[1:]] == ["message 8", "message 9"]
    assert history.warnings


def test_no_empty_message_is_ever_sent() -> None:
    assembly = build(history=(*chat(2), Message(role="user", text="")), renders=(), tools=())
    assert all(text.strip() for _, text in payload_messages(assembly)) or pytest.fail(
        "an empty message would be sent"
    )


def test_past_the_allocation_history_goes_first_then_rows_level_by_level() -> None:
    roomy = build(history=chat(40), renders=(view("a", 30), view("b", 30)))
    tight = ModelLimits(
        name="m", window=200_000, output_reserve=0, input_allocation=roomy.fit.estimate - 300
    )
    cut = build(limits=tight, history=chat(40), renders=(view("a", 30), view("b", 30)))
    assert cut.fit.ok
    assert cut.fit.estimate <= tight.input_allocation
    history = next(s for s in cut.sections if s.id == "history")
    assert history.clipped
    rows = [next(s for s in cut.sections if s.id == f"render.{v}") for v in "ab"]
    assert not any(r.clipped for r in rows), "rows are cut only after history"

    tighter = ModelLimits(
        name="m", window=200_000, output_reserve=0, input_allocation=roomy.fit.estimate - 2000
    )
    cut = build(limits=tighter, history=chat(40), renders=(view("a", 30), view("b", 30)))
    assert cut.fit.ok
    history = next(s for s in cut.sections if s.id == "history")
    assert len(history.messages) == 3, "only the notice and the pinned newest exchange"
    shown = [
        next(s for s in cut.sections if s.id == f"render.{v}").text.count("| open |") for v in "ab"
    ]
    assert 0 < shown[0] < 30
    assert abs(shown[0] - shown[1]) <= 1, "rows are cut one level across every view"


def test_what_cannot_be_cut_and_does_not_fit_is_refused_before_any_call() -> None:
    small = ModelLimits(name="m", window=100_000, output_reserve=0, input_allocation=300)
    assembly = build(limits=small, prompt="You are the support desk. " * 200)
    assert not assembly.fit.ok
    with pytest.raises(FitOverflow, match=r"over the input allocation of 300 — largest: prompt"):
        ensure_fits(assembly)


def test_an_opening_request_that_does_not_fit_is_refused_by_assembly_itself() -> None:
    small = ModelLimits(name="m", window=100_000, output_reserve=0, input_allocation=300)
    prompt = "You are the support desk. " * 200
    with pytest.raises(FitOverflow, match=r"over the input allocation of 300 — largest: prompt"):
        assemble(
            inputs(prompt=prompt),
            counter=COUNTER,
            budgets=SectionBudgets(role={}),
            limits=small,
            refuse_overflow=True,
        )
    assert build().fit.ok, "one that fits is not refused"


def test_what_a_payload_reads_is_joined_once_from_the_sections() -> None:
    assembly = build()

    def joined(place: str) -> str:
        return "\n\n".join(s.text for s in assembly.sections if s.place == place and s.text)

    assert assembly.system_text == joined("system")
    assert "You are the support desk." in assembly.system_text
    assert assembly.state_text == joined("state")
    assert assembly.tail_text == joined("tail")
    assert assembly.tail_text.endswith("What is the status of my order?")
    assert assembly.tools == (CONTEXT_OPEN,)
    assert [m.text for m in assembly.history] == [m.text for m in chat(4)]


def test_the_window_counts_the_output_reserve() -> None:
    limits = ModelLimits(name="m", window=2_000, output_reserve=1_900, input_allocation=2_000)
    assembly = build(limits=limits)
    assert not assembly.fit.ok
    with pytest.raises(FitOverflow, match="plus the output reserve of 1,900 is over the window"):
        ensure_fits(assembly)


def test_a_later_request_of_the_turn_is_checked_again_as_tool_results_grow() -> None:
    assembly = build()
    limits = ModelLimits(
        name="m",
        window=assembly.fit.estimate + 600,
        output_reserve=100,
        input_allocation=assembly.fit.estimate + 500,
    )
    assembly = build(limits=limits)
    assert assembly.fit.ok
    call = ModelStep(calls=(ToolCall(id="c1", name="context_open", arguments={"name": "policy"}),))
    small = Transcript().then(call, ToolResult(call_id="c1", name="context_open", content="ok"))
    assert check_request(assembly, small, COUNTER).ok
    big = Transcript().then(
        call, ToolResult(call_id="c1", name="context_open", content="a long result " * 400)
    )
    with pytest.raises(FitOverflow, match=r"tool results added .* largest: .*transcript") as err:
        check_request(assembly, big, COUNTER)
    # The advice points the right way: less tool output, or a larger window.
    assert "Turn the tools' output (fewer rows, shorter results) down" in str(err.value)
    assert "model.window down" not in str(err.value)
    assert "raise model.input_allocation / model.window" in str(err.value)


def test_the_history_notice_counts_messages_that_were_never_read() -> None:
    assembly = build({"history": 200}, history=chat(30), history_older=170)
    history = next(s for s in assembly.sections if s.id == "history")
    hidden = int(history.messages[0].text[1:].split()[0])
    assert hidden + len(history.messages) - 1 == 200


@pytest.mark.parametrize(
    ("kw", "allocation"),
    [
        pytest.param({}, 150_000, id="roomy"),
        pytest.param(
            {"history": chat(40), "renders": (view("a", 30), view("b", 30))}, 1_500, id="cut"
        ),
        pytest.param({"history": chat(5), "history_older": 300}, 150_000, id="unread"),
        pytest.param({"history": (), "renders": ()}, 150_000, id="bare"),
    ],
)
def test_the_verdict_counts_exactly_what_is_sent(kw: dict[str, Any], allocation: int) -> None:
    limits = ModelLimits(name="m", window=200_000, output_reserve=0, input_allocation=allocation)
    assembly = build(limits=limits, **kw)
    tools = sum(s.used_tokens for s in assembly.place("tool"))
    assert assembly.fit.estimate == COUNTER.count_messages(payload_messages(assembly)) + tools


def test_the_verdict_is_exact_with_an_exact_counter_too() -> None:
    counter = TiktokenCounter.from_file(rank_dir() / "o200k_base.tiktoken")
    limits = ModelLimits(name="m", window=200_000, output_reserve=0, input_allocation=1_500)
    assembly = assemble(
        inputs(history=chat(40), renders=(view("a", 30), view("b", 30))),
        counter=counter,
        budgets=SectionBudgets(),
        limits=limits,
    )
    assert assembly.fit.ok
    tools = sum(s.used_tokens for s in assembly.place("tool"))
    assert assembly.fit.estimate == counter.count_messages(payload_messages(assembly)) + tools
    assert assembly.fit.estimate <= 1_500
