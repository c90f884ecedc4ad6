"""docs/limits.md states the limits the code enforces: each number of its Sizes, YAML,
Numbers, Text and service tables is the one in `keel.brain.limits` or `keel.web.limits`,
and its examples are what a brain that breaks them gets (a number past its range, a link
out of the brain, a folder named like a brain file), on a fresh copy of examples/brain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from keel.brain import limits, load_brain
from keel.web import limits as web
from tests.runtime.driver import copy_reference

DOC = Path(__file__).parents[1] / "docs" / "limits.md"
PAGE = DOC.read_text(encoding="utf-8")


def table(heading: str) -> list[list[str]]:
    """The rows (cells, stripped) of the first table after `heading`, header left out."""
    section = PAGE.split(f"\n{heading}\n", 1)[1]
    first = re.search(r"^\|.*?(?=\n\n)", section, re.DOTALL | re.MULTILINE)
    assert first, f"a table under {heading}"
    rows = first[0].splitlines()[2:]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def number(text: str) -> int:
    found = re.match(r"[\d,]+", text)
    assert found, f"a number opens {text!r}"
    return int(found[0].replace(",", ""))


# The Numbers table's settings and the range each is checked against.
RANGES = {
    "`chars`": limits.CHARS,
    "`maxActive`": limits.MAX_ACTIVE,
    "`turnChars`": limits.TURN_CHARS,
    "`keep`": limits.KEEP,
    "`codeTimeoutMs`": limits.CODE_TIMEOUT_MS,
    "`state.rows`": limits.STATE_ROWS,
    "`state.readTimeoutMs`": limits.STATE_READ_TIMEOUT_MS,
    "`messageOrigins.retentionDays`": limits.RETENTION_DAYS,
    "`contentProbe.context`": limits.CONTENT_PROBE_SECONDS,
    "`model.window`": limits.MODEL_WINDOW,
    "`model.output_reserve`": limits.OUTPUT_RESERVE,
    "`model.input_allocation`": limits.INPUT_ALLOCATION,
    "a budget under `sections:`": limits.SECTION_BUDGET,
}


def test_the_numbers_table_is_each_setting_range() -> None:
    rows = table("## Numbers")
    seen = {row[0]: (row[2], row[3]) for row in rows}
    assert set(seen) == {*RANGES, "`approvals.timeout`"}
    for setting, bounds in RANGES.items():
        low, high = seen[setting]
        assert (number(low), number(high)) == (bounds.low, bounds.high), setting
    low, high = seen["`approvals.timeout`"]
    assert (low, high) == ("1 second", "366 days")
    timeout = limits.APPROVAL_TIMEOUT_SECONDS
    assert (timeout.low, timeout.high) == (1, 366 * 86_400)


def test_the_sizes_yaml_and_text_tables_are_the_code_limits() -> None:
    units = {"KiB": 1 << 10, "MiB": 1 << 20}
    sizes = [
        int(size) * units[unit] for size, unit in (r[1].split()[:2] for r in table("## Sizes"))
    ]
    assert sizes[0] == limits.MAX_FILE_BYTES
    assert sizes[1] == limits.MAX_SQL_BYTES
    assert sizes[2] == limits.MAX_YAML_CHARS
    yaml = [r[1] for r in table("## YAML")]
    assert number(yaml[0]) == limits.MAX_YAML_DEPTH
    assert number(yaml[1]) == limits.MAX_YAML_NODES
    assert number(yaml[2]) == limits.MAX_INT_DIGITS
    assert yaml[4] == f"up to {limits.MAX_EXACT_YAML_CHARS >> 10} KiB"
    text = [number(r[1]) for r in table("## Text")]
    assert text[:4] == [
        limits.MAX_ENTITY_CHARS,
        limits.MAX_CHAT_ID_CHARS,
        limits.MAX_SECTION_ID_CHARS,
        limits.MAX_BOT_CHARS,
    ]
    assert text[4:] == [limits.MAX_CHAT_ID_CHARS, limits.MAX_BOT_CHARS, limits.MAX_ENTITY_CHARS]
    assert f"At most {limits.MAX_PROBLEMS} problems are listed for one file" in PAGE
    assert f"| sections one `render` returns | {limits.MAX_RENDER_SECTIONS} |" in PAGE


def test_the_service_table_is_the_web_limits() -> None:
    rows = {r[0]: r[1] for r in table("## The service: what a caller sends")}
    body = rows["a request's body"]
    assert number(body.split("(")[1]) == web.MAX_BODY_BYTES
    assert "from 1 KiB to 1 GiB" in body
    assert (web.BODY_BYTES.low, web.BODY_BYTES.high) == (1 << 10, 1 << 30)
    assert number(rows["an id in a body, path or query"]) == web.MAX_NAME
    assert number(rows["a text (a turn's `input`, a message, a card's note)"]) == web.MAX_TEXT
    keys = "a list in a body; the keys of a payload, of a scenario's vars, of what-if's `set`"
    assert number(rows[keys]) == web.MAX_LIST
    deep = "a free-form value (an event's `payload`, a scenario's `vars`)"
    assert number(rows[deep]) == web.MAX_JSON_DEPTH
    assert rows["a time (`at`, `now`)"].startswith(
        f"{web.EARLIEST.date().isoformat()} to {web.LATEST.date().isoformat()} in UTC"
    )


def skip_reasons(brain: Path) -> dict[str, str]:
    return {s.path: s.reason for s in load_brain(brain).skips}


def test_a_number_past_its_range_skips_with_the_page_message(tmp_path: Path) -> None:
    (shown,) = re.findall(r"`('state\.rows' is \d+, above the limit of [\d,]+)`", PAGE)
    brain = copy_reference(tmp_path / "brain")
    manifest = brain / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("rows: 20 ", "rows: 9223372036854775808 "), "utf-8")
    assert shown in skip_reasons(brain)["constitution/MANIFEST.yaml"]


@pytest.mark.parametrize(
    ("found", "shown"),
    [
        pytest.param("directory", "this is a directory, not a regular file", id="directory"),
        pytest.param("link-out", "a symbolic link to a file outside the brain", id="link-out"),
        pytest.param("dangling", "cannot read: ", id="dangling"),
    ],
)
def test_what_is_found_where_a_file_belongs_is_skipped_as_the_table_says(
    tmp_path: Path, found: str, shown: str
) -> None:
    assert f'"{shown.removesuffix(": ")}' in PAGE
    brain = copy_reference(tmp_path / "brain")
    target = brain / "features" / "support" / "x.context.md"
    if found == "directory":
        target.mkdir()
    elif found == "link-out":
        secret = tmp_path / "secret.md"
        secret.write_text("---\nwhen: [always]\n---\nx\n", encoding="utf-8")
        target.symlink_to(secret)
    else:
        target.symlink_to(brain / "features" / "nowhere.md")  # inside, but not there
    assert shown in skip_reasons(brain)["features/support/x.context.md"]
