"""docs/tokens.md says what the counters do, and its accuracy table is what they measure:

- `counter_from_settings` returns the counter each row of the first table names;
- a request costs its texts plus 4 a message plus 3, with every counter (the page's formula);
- an exact counter reads a special-token string as plain text;
- the o200k table is what `bench/token_accuracy.py`'s `accuracy` gives on the test corpus
  now, row by row (the exact counts do not vary; the page rounds to 0.1 %), and its `all`
  row keeps the bounds the page says the tests hold.

- the cl100k paragraph's ranges are what the same measure gives against cl100k_base;
- degenerate input counts the way the page says (a run of one letter under, of `-` over);
- what the suite cannot reproduce is marked so on the page, naming the bench that does.

The speed table is not compared: its milliseconds move with the machine. The workload count
(15,813) is of a workload kept outside the repository; the page says so of both, and this
checks that the bench it names is the one that states and measures them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from keel.tokens import TokenCounter
from keel.tokens.estimate import Estimator
from keel.tokens.exact import TiktokenCounter, ToktokCounter, counter_from_settings
from tests.tokens.corpus import rank_dir

ROOT = Path(__file__).parents[1]
PAGE = (ROOT / "docs" / "tokens.md").read_text(encoding="utf-8")
MESSAGES = [("system", "You are desk."), ("user", "Where is T-481?"), ("assistant", "Shipped.")]


def bench_accuracy() -> Any:
    return bench_module().accuracy


def bench_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "token_accuracy", ROOT / "bench" / "token_accuracy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_setting_names_its_counter() -> None:
    assert "| `estimate` (default) | `Estimator` |" in PAGE
    assert isinstance(counter_from_settings("estimate", None), Estimator)
    assert isinstance(counter_from_settings(None, None), Estimator)
    assert "| `o200k` with a rank folder | `TiktokenCounter` |" in PAGE
    assert isinstance(counter_from_settings("o200k", rank_dir()), TiktokenCounter)
    assert isinstance(counter_from_settings("cl100k", rank_dir()), TiktokenCounter)
    assert "| `o200k` / `cl100k`, no folder | `ToktokCounter` |" in PAGE
    assert isinstance(counter_from_settings("o200k", None), ToktokCounter)


def test_a_request_costs_its_texts_plus_the_page_framing() -> None:
    assert "count_messages(messages) = sum(count(text)) + 4 * len(messages) + 3" in PAGE
    counters: list[TokenCounter] = [
        Estimator(),
        counter_from_settings("o200k", rank_dir()),
        counter_from_settings("o200k", None),
    ]
    for counter in counters:
        texts = sum(counter.count(text) for _, text in MESSAGES)
        assert counter.count_messages(MESSAGES) == texts + 4 * len(MESSAGES) + 3


def test_an_exact_counter_reads_a_special_token_as_text() -> None:
    assert "`<|endoftext|>`" in PAGE
    for counter in (
        counter_from_settings("o200k", rank_dir()),
        counter_from_settings("o200k", None),
    ):
        assert counter.count("<|endoftext|>") > 1


def page_rows(heading: str) -> list[list[str]]:
    """The numeric cells of the first table after `heading`: texts, mean, mean abs, worst
    under, worst over, each without bold, spaces, `%` and with a plain minus."""
    section = PAGE.split(heading, 1)[1]
    table = re.search(r"^\| category .*?(?=\n\n)", section, re.DOTALL | re.MULTILINE)
    assert table
    rows = []
    for line in table[0].splitlines()[2:]:
        cells = [
            c.strip().replace("*", "").replace("−", "-").replace(" %", "")
            for c in line.strip("|").split("|")
        ]
        rows.append(cells[1:])
    return rows


def test_the_o200k_table_is_what_the_corpus_measures() -> None:
    o200k = TiktokenCounter.from_file(rank_dir() / "o200k_base.tiktoken", "o200k_base")
    table = bench_accuracy()({"o200k_base": o200k})["o200k_base"]
    measured = [
        [
            str(row["texts"]),
            f"{row['mean'] * 100:+.1f}",
            f"{row['mean_abs'] * 100:.1f}",
            f"{row['worst_under'] * 100:+.1f}",
            f"{row['worst_over'] * 100:+.1f}",
        ]
        for row in table.values()
    ]
    assert page_rows("Against **o200k_base**") == measured
    every = table["all"]
    assert every["mean_abs"] <= 0.05
    assert every["worst_under"] >= -0.15


def percent(value: float) -> int:
    return round(value * 100)


def test_the_cl100k_paragraph_is_what_the_corpus_measures() -> None:
    cl100k = TiktokenCounter.from_file(rank_dir() / "cl100k_base.tiktoken", "cl100k_base")
    table = bench_accuracy()({"cl100k_base": cl100k})["cl100k_base"]

    def span(category: str) -> str:
        row = table[category]
        return f"{percent(row['worst_over'])} % to {percent(row['worst_under'])} %".replace(
            "-", "−"
        )

    def about(category: str) -> str:
        return f"about {round(table[category]['mean'] * 10) * 10} %".replace("-", "−")

    paragraph = PAGE.split("Against **cl100k_base**", 1)[1].split("\n\n", 1)[0]
    paragraph = " ".join(paragraph.split())
    assert f"{span('prose-latin')} on accented Latin prose" in paragraph
    assert f"{about('cjk')} on CJK" in paragraph
    assert f"{about('cyrillic-greek')} on Cyrillic and Greek" in paragraph
    assert f"{span('rtl-indic-thai')} on Arabic, Hebrew, Hindi and Thai" in paragraph
    assert "fine for English, code, JSON, tables and numbers" in paragraph
    for category in ("prose-en", "code", "json", "tables", "numbers"):
        assert table[category]["worst_under"] >= -0.15, category


def test_degenerate_input_counts_as_the_page_says() -> None:
    assert "a long run of one letter (`aaaa…`)" in PAGE
    exact = counter_from_settings("o200k", None)
    estimate = Estimator()
    # Past the bound the page holds the corpus to (never more than 15 % under).
    for under in ("a" * 4000, "é" * 2000):
        assert estimate.count(under) < exact.count(under) * 0.85, under[:4]
    for over in ("-" * 4000, "=" * 4000):
        assert estimate.count(over) > exact.count(over) * 2, over[:4]


def test_what_the_suite_cannot_reproduce_is_marked_with_the_bench_that_does() -> None:
    paragraphs = [" ".join(p.split()) for p in PAGE.split("\n\n")]
    marked = [p for p in paragraphs if "*Not reproduced by the test suite:*" in p]
    assert len(marked) == 2, "the workload count and the speed table are each marked"
    assert all("`bench/token_accuracy.py`" in text for text in marked)
    bench = (ROOT / "bench" / "token_accuracy.py").read_text(encoding="utf-8")
    # The bench named is the one that states the count and prints each counter's framed total.
    stated = re.search(r"gives exactly the ([\d,]+) o200k tokens its README states", marked[0])
    assert stated
    assert int(stated[1].replace(",", "")) == bench_module().WORKLOAD_O200K_FRAMED
    assert '"framed": {label: c.count_messages(messages)' in bench
    assert "| counter | whole text | a call per message | one batch |" in bench
    for line in re.findall(r"^    uv run (?:python|pytest) (\S+)", PAGE, re.MULTILINE):
        assert (ROOT / line).is_file(), line
