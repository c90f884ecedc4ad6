"""Rows and history: measured only as far as they might be sent, then fitted exactly."""

from __future__ import annotations

from collections.abc import Sequence
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.assemble import fitting
from keel.assemble.assembler import AssemblyInputs, assemble
from keel.assemble.fitting import largest_fitting
from keel.assemble.history_cuts import history_notice
from keel.assemble.measure import Measured, Meter
from keel.assemble.row_cuts import RenderInput
from keel.assemble.values import Assembly, Message
from keel.brain.knobs import ModelLimits, SectionBudgets
from keel.tokens.estimate import Estimator


class Recording:
    """The built-in estimate, remembering every text it was asked to measure."""

    name = "estimate"

    def __init__(self) -> None:
        self.inner = Estimator()
        self.seen: list[str] = []
        self.batches = 0

    def count(self, text: str) -> int:
        self.seen.append(text)
        return self.inner.count(text)

    def count_each(self, texts: Sequence[str]) -> list[int]:
        self.seen += texts
        self.batches += 1
        return self.inner.count_each(texts)

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        return self.inner.count_messages(messages)


def view(name: str, rows: int, words: int = 8) -> RenderInput:
    return RenderInput(
        view=name,
        header=f"{name}: id | note",
        rows=tuple(f"{name}-{i:04d} | " + "note " * words for i in range(rows)),
    )


def chat(n: int, words: int = 30) -> tuple[Message, ...]:
    return tuple(
        Message(role="user" if i % 2 == 0 else "assistant", text=f"m{i:04d} " + "word " * words)
        for i in range(n)
    )


def build(counter: Recording | Estimator, allocation: int, **kw: object) -> Assembly:
    limits = ModelLimits(name="m", window=10**6, output_reserve=0, input_allocation=allocation)
    inputs = AssemblyInputs(current="What now?", prompt="You help.", **kw)  # type: ignore[arg-type]
    return assemble(inputs, counter=counter, budgets=SectionBudgets(defaults={}), limits=limits)


def test_a_tight_allocation_never_measures_the_oldest_history_or_the_bottom_rows() -> None:
    counter = Recording()
    history, renders = chat(300), (view("a", 300), view("b", 300))
    assembly = build(counter, 2_000, history=history, renders=renders)
    assert assembly.fit.ok
    seen = set(counter.seen)
    assert history[0].text not in seen
    assert history[-1].text in seen
    assert renders[0].rows[0] + "\n" in seen
    assert renders[0].rows[-1] + "\n" not in seen
    units = len(history) + sum(len(r.rows) for r in renders)
    assert len(counter.seen) < units / 4
    assert counter.batches == 2, "one round for the guess, one count of what is sent"


def test_rows_that_all_fit_leave_the_room_to_history_measured_newest_first() -> None:
    counter = Recording()
    history = chat(400)
    assembly = build(counter, 6_000, history=history, renders=(view("a", 5),))
    kept = next(s for s in assembly.sections if s.id == "history").messages
    assert 3 < len(kept) < 400
    assert history[-1] in kept
    assert history[0] not in kept
    assert history[0].text not in set(counter.seen)


def test_a_short_first_guess_only_costs_more_rounds() -> None:
    counter = Recording()
    with patch.object(fitting, "BYTES_PER_TOKEN", 0):
        short = build(counter, 3_000, history=chat(60), renders=(view("a", 80), view("b", 80)))
    assert counter.batches > 2
    assert short == build(
        Estimator(), 3_000, history=chat(60), renders=(view("a", 80), view("b", 80))
    )


@settings(max_examples=200, deadline=None)
@given(
    messages=st.integers(0, 60),
    words=st.integers(0, 40),
    rows=st.lists(st.integers(0, 60), max_size=3),
    share=st.floats(0.02, 1.2),
    pinned=st.integers(0, 4),
    budgets=st.fixed_dictionaries(
        {}, optional={"history": st.integers(0, 800), "render": st.integers(0, 400)}
    ),
)
def test_how_much_is_measured_first_never_changes_what_is_kept(
    messages: int,
    words: int,
    rows: list[int],
    share: float,
    pinned: int,
    budgets: dict[str, int],
) -> None:
    inputs = AssemblyInputs(
        current="What now?",
        prompt="You help.",
        renders=tuple(view(f"v{i}", n, words % 12) for i, n in enumerate(rows)),
        history=chat(messages, words),
        pinned_history=pinned,
        history_older=words % 3,
    )
    size = sum(len(m.text) for m in inputs.history) + sum(
        len(row) for r in inputs.renders for row in r.rows
    )
    allocation = 40 + int(share * size / 4)  # from nothing cut to most of it cut
    limits = ModelLimits(name="m", window=10**6, output_reserve=0, input_allocation=allocation)
    results = []
    for guess in (0, 4, 10**6):  # nothing first, the usual guess, everything first
        with patch.object(fitting, "BYTES_PER_TOKEN", guess):
            results.append(
                assemble(
                    inputs,
                    counter=Estimator(),
                    budgets=SectionBudgets(role=budgets, defaults={}),
                    limits=limits,
                )
            )
    assert results[1] == results[0]
    assert results[2] == results[0]


def assembled(guess: int, allocation: int, budgets: dict[str, int]) -> Assembly:
    rows = [view("a", 40, 5), view("b", 35, 9)]
    inputs = AssemblyInputs(current="What now?", history=chat(60, 12), renders=tuple(rows))
    limits = ModelLimits(name="m", window=10**6, output_reserve=0, input_allocation=allocation)
    with patch.object(fitting, "BYTES_PER_TOKEN", guess):
        return assemble(
            inputs,
            counter=Estimator(),
            budgets=SectionBudgets(role=budgets, defaults={}),
            limits=limits,
        )


@pytest.mark.parametrize(
    ("limit", "values"),
    [
        pytest.param("allocation", range(100, 3_600, 7), id="allocation"),
        pytest.param("render", range(0, 700, 3), id="render-budget"),
        pytest.param("history", range(0, 1_400, 5), id="history-budget"),
    ],
)
def test_every_limit_keeps_the_same_whether_measured_in_rounds_or_all_at_once(
    limit: str, values: range
) -> None:
    for value in values:
        allocation, budgets = (value, {}) if limit == "allocation" else (3_000, {limit: value})
        rounds, all_at_once = (assembled(g, allocation, budgets) for g in (0, 10**6))
        assert rounds == all_at_once, f"{limit} = {value}"


def test_the_largest_fitting_count_is_found_even_where_a_notice_makes_fewer_cost_more() -> None:
    least = [0, 10, 20, 30, 40, 50].__getitem__
    cost = [15, 25, 35, 45, 55, 50].__getitem__  # a notice of 15, none with nothing hidden
    assert largest_fitting(5, 52, least, cost) == 5, "5 fits though 4 does not"
    assert largest_fitting(5, 49, least, cost) == 3
    assert largest_fitting(5, 14, least, cost) == 0


def test_a_meter_measures_every_part_asked_for_in_one_batch_per_round() -> None:
    counter = Recording()
    a, b = Measured(["one", "two", "three"]), Measured(["four", "five"], extra=4)
    meter = Meter(counter)
    meter.ask(a, 2)
    meter.ask(b, 9)
    meter.ask(a, 1)  # a smaller ask never shrinks a bigger one
    meter.run()
    assert counter.batches == 1
    assert counter.seen == ["one", "two", "four", "five"]
    assert a.measured == 2
    assert b.complete
    assert b.costs() == [c + 4 for c in Estimator().count_each(["four", "five"])]
    meter.ask(a, 3)
    meter.run()
    assert counter.seen[-1] == "three"
    assert a.complete


def test_a_notice_dearer_than_the_messages_it_would_hide_never_costs_a_row() -> None:
    history = (
        Message(role="user", text="hi"),
        Message(role="assistant", text="tell me about " + "things " * 20),
    )
    notice = Estimator().count(history_notice(1))
    assert notice > Estimator().count("hi") + 4, "the notice must cost more than what it hides"
    rows = RenderInput(
        view="a", header="a: id", rows=tuple(f"row {i} lorem ipsum" for i in range(10))
    )
    inputs = AssemblyInputs(
        current="What now?", prompt="You help.", history=history, renders=(rows,), pinned_history=1
    )
    limits = ModelLimits(name="m", window=10**6, output_reserve=0, input_allocation=120)
    assembly = assemble(
        inputs, counter=Estimator(), budgets=SectionBudgets(defaults={}), limits=limits
    )
    assert assembly.fit.ok
    assert not any(s.clipped for s in assembly.sections), "keeping all is cheaper than any cut"
