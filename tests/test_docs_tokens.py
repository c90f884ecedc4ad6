"""docs/tokens.md says what the counters do, and its accuracy table is what they measure:

- `counter_from_settings` returns the counter each row of the first table names;
- a request costs its texts plus 4 a message plus 3, with every counter (the page's formula);
- an exact counter reads a special-token string as plain text;
- the o200k table is what `bench/token_accuracy.py`'s `accuracy` gives on the test corpus
  now, row by row (the exact counts do not vary; the page rounds to 0.1 %), and its `all`
  row keeps the bounds the page says the tests hold.

The speed table is not compared: its milliseconds move with the machine (as the page says).
The workload count (15,813) is of a workload kept outside the repository, so it is not
checked here."""

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
    spec = importlib.util.spec_from_file_location(
        "token_accuracy", ROOT / "bench" / "token_accuracy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.accuracy


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
