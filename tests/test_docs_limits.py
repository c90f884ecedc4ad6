"""docs/limits.md states the limits the code enforces: each number of its Sizes, YAML,
Numbers, Text and service tables is the one in `keel.brain.limits` or `keel.web.limits`,
and its examples are what a brain that breaks them gets (a number past its range, a link
out of the brain, a folder named like a brain file), on a fresh copy of examples/brain.

Each row of "Which files are read" about what is not a plain file or not UTF-8 (a FIFO, a
socket, a name or a text that is not UTF-8, a NUL byte, a file past its size) is made in
the brain, and it loads past it, in bounded time, skipping that file with the reason; a
FIFO as access.yaml refuses every turn, and a FIFO or bad bytes where `keel import` reads a
rule are skipped. Each YAML row and "also refused" claim is a frontmatter that breaks it
(and, for each bound, one that stands at it and loads), read by the brain's own loader."""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keel.brain import Brain, limits, load_brain
from keel.importers.run import import_rules
from keel.web import limits as web
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import shell

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


def in_time(work: Callable[[], Any], seconds: float = 60) -> Any:
    """`work()`'s answer; a read that blocks (a FIFO opened) fails the test, not hangs it."""
    done: list[Any] = []
    failed: list[Exception] = []

    def run() -> None:
        try:
            done.append(work())
        except Exception as error:  # noqa: BLE001 - re-raised in the test's own thread
            failed.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if failed:
        raise failed[0]
    assert done, f"still reading after {seconds} s: something blocked"
    return done[0]


def loaded_in_time(brain: Path) -> Brain:
    found: Brain = in_time(lambda: load_brain(brain))
    return found


def test_a_fifo_or_a_socket_is_skipped_without_being_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "| a named pipe (FIFO), a device, a socket | skipped without being opened" in PAGE
    brain = copy_reference(tmp_path / "brain")
    support = brain / "features" / "support"
    os.mkfifo(support / "pipe.context.md")  # opened for reading, it would wait for a writer
    listening = socket.socket(socket.AF_UNIX)
    try:
        # Bound by a relative name: a socket's whole path must fit in 108 bytes, and a
        # test's temporary folder can be longer than that.
        monkeypatch.chdir(support)
        listening.bind("sock.context.md")
        got = loaded_in_time(brain)
    finally:
        listening.close()
    reasons = {skip.path: skip.reason for skip in got.skips}
    assert reasons["features/support/pipe.context.md"].startswith(
        "this is a named pipe (FIFO), not a regular file"
    )
    assert reasons["features/support/sock.context.md"].startswith(
        "this is a socket, not a regular file"
    )
    assert "ticket" in got.contexts, "the rest of the brain loads"


def test_a_fifo_as_access_yaml_refuses_every_turn(tmp_path: Path) -> None:
    section = " ".join(PAGE.split("## access.yaml fails closed", 1)[1].split())
    assert "a directory, a FIFO — refuses every turn of every bot with that reason" in section
    brain = copy_reference(tmp_path / "brain")
    (brain / "constitution" / "access.yaml").unlink()
    os.mkfifo(brain / "constitution" / "access.yaml")
    access = loaded_in_time(brain).access
    assert access.broken is not None
    assert "named pipe (FIFO)" in str(access.broken)
    assert access.rules == ()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "KEEL_HOOK_SERVER": "off",
    }
    for room in ("--bot desk --chat tg:chat:-1003000000001", "--bot nova --dm --chat tg:user:9"):
        done = shell(f"keel turn brain {room} --input hi", tmp_path, env)  # 60 s at most
        assert done.returncode != 0, done.stdout
        said = " ".join((done.stdout + done.stderr).split())
        assert "named pipe (FIFO)" in said, said


def test_text_that_is_not_utf8_or_holds_nul_is_skipped(tmp_path: Path) -> None:
    assert "A file may hold no NUL byte anywhere" in PAGE
    assert "and must be UTF-8." in PAGE
    brain = copy_reference(tmp_path / "brain")
    support = brain / "features" / "support"
    (support / "latin.context.md").write_bytes(b"---\nwhen: [chat]\n---\ncaf\xe9\n")
    (support / "nul.context.md").write_bytes(b"---\nwhen: [chat]\n---\na\x00b\n")
    reasons = skip_reasons(brain)
    assert reasons["features/support/latin.context.md"].startswith("the file is not UTF-8")
    assert reasons["features/support/nul.context.md"] == (
        "the file is binary, not text — brain files are UTF-8 text"
    )


def test_a_name_that_is_not_utf8_is_skipped_as_the_table_says(tmp_path: Path) -> None:
    (shown,) = re.findall(r'skipped: "(the name is not valid UTF-8)"', PAGE)
    brain = copy_reference(tmp_path / "brain")
    folder = os.fsencode(brain / "features" / "support")
    with open(folder + b"/caf\xe9.context.md", "wb") as made:
        made.write(b"---\nwhen: [chat]\n---\nx\n")
    (reason,) = [s.reason for s in load_brain(brain).skips if "caf" in s.path]
    assert reason.startswith(shown)


def test_a_content_file_past_its_size_is_skipped(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    front = b"---\nwhen: [chat]\n---\n"
    big = brain / "features" / "support" / "big.context.md"
    big.write_bytes(front + b"x" * (limits.MAX_FILE_BYTES - len(front)))
    assert "features/support/big.context.md" not in skip_reasons(brain)
    big.write_bytes(front + b"x" * (limits.MAX_FILE_BYTES - len(front) + 1))
    assert (
        "over the limit of 1,048,576 bytes"
        in skip_reasons(brain)["features/support/big.context.md"]
    )


def test_a_fifo_or_bad_bytes_where_import_reads_a_rule_are_skipped(tmp_path: Path) -> None:
    rows = {r[0]: r[1] for r in table("## keel import")}
    assert rows["a named pipe (FIFO), a device, a socket"].startswith(
        "skipped without being opened"
    )
    assert rows["a NUL byte anywhere, or bytes that are not UTF-8"] == "skipped"
    source = tmp_path / "repo"
    (source / ".cursor" / "rules").mkdir(parents=True)
    os.mkfifo(source / "CLAUDE.md")
    (source / "AGENTS.md").write_bytes(b"Use caf\xe9 tabs.\n")
    (source / ".cursor" / "rules" / "nul.mdc").write_bytes(b"a\x00b\n")
    brain = copy_reference(tmp_path / "brain")
    report = in_time(lambda: import_rules(source, brain))
    skipped = {notice.path for notice in report.skipped}
    assert skipped == {"CLAUDE.md", "AGENTS.md", ".cursor/rules/nul.mdc"}, report.skipped
    assert report.rules == ()


def front_reason(tmp_path: Path, front: str) -> str | None:
    """Why a context whose frontmatter is `front` is skipped, None when it loads; a key
    the context does not take (`k`) still shows its YAML was read."""
    brain = copy_reference(tmp_path / "brain")
    path = "features/support/y.context.md"
    (brain / path).write_text(f"---\nwhen: [chat]\n{front}---\nx\n", encoding="utf-8")
    reasons = skip_reasons(brain)
    return reasons.get(path)


def read(reason: str | None) -> bool:
    """The YAML was read: the file loaded, or failed only on what the context takes."""
    return reason is None or reason.startswith(("unknown key '", "'keep' is"))


EXACT_ONLY = "j: [context:]\n"  # the fast parsers refuse it; YAML 1.2 reads it
PADDING = "# " + "x" * 100 + "\n"
LAUGH = "".join(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]\n" for n in range(1, 5))


@pytest.mark.parametrize(
    ("row", "at_bound", "past", "refused"),
    [
        pytest.param(
            "nesting: collections inside collections",
            "k: " + "[" * 63 + "]" * 63 + "\n",
            "k: " + "[" * 64 + "]" * 64 + "\n",
            "nests more than 64 levels deep",
            id="nesting",
        ),
        pytest.param(
            "values (keys, items, scalars) in one document",
            "k: &l0 x\n" + LAUGH,  # some 12,000 values, aliases expanded
            "k: &l0 x\n" + LAUGH + "l5: [*l4, *l4]\n",  # some 34,000
            "past 25,000 values",
            id="values",
        ),
        pytest.param(
            "digits of one integer",
            "keep: " + "1" * 100 + "\n",
            "keep: " + "1" * 101 + "\n",
            "a number of 101 digits",
            id="digits",
        ),
        pytest.param(
            "digits of one integer",
            "keep: -0x" + "1_" * 100 + "\n",  # 100 digits: the sign, `_` and `0x` are free
            "keep: -0x" + "1_" * 100 + "1\n",
            "a number of 101 digits",
            id="digits-spelled",
        ),
        pytest.param(
            "`[` and `{` on one line, in a document only the YAML 1.2 parser reads",
            EXACT_ONLY + "k: [" + "[], " * 63 + "]\n",
            EXACT_ONLY + "k: [" + "[], " * 64 + "]\n",
            "a line opens more than 64 '[' or '{'",
            id="crowded-line",
        ),
        pytest.param(
            "documents the YAML 1.2 parser reads again when the fast parsers refuse them",
            PADDING * 600 + EXACT_ONLY,  # under 64 KiB
            PADDING * 700 + EXACT_ONLY,
            "broken YAML: found unexpected ':'",
            id="exact-size",
        ),
    ],
)
def test_each_yaml_row_holds_at_its_bound_and_refuses_past_it(
    tmp_path: Path, row: str, at_bound: str, past: str, refused: str
) -> None:
    assert any(cells[0].startswith(row) for cells in table("## YAML")), row
    assert read(front_reason(tmp_path / "at", at_bound))
    reason = front_reason(tmp_path / "past", past)
    assert reason is not None
    assert refused in reason


def test_about_4000_access_rules_fit_in_the_values_bound(tmp_path: Path) -> None:
    assert "25,000 — about 4,000 access rules" in PAGE

    def access(rules: int) -> Any:
        brain = copy_reference(tmp_path / f"brain{rules}")
        chats = "".join(
            f'      "tg:chat:-{1000 + n}": {{ role: client-desk, title: Acme }}\n'
            for n in range(rules)
        )
        text = f"bots:\n  nova:\n    chats:\n{chats}"
        (brain / "constitution" / "access.yaml").write_text(text, encoding="utf-8")
        return load_brain(brain).access

    fits = access(4_000)
    assert (fits.broken, len(fits.rules)) == (None, 4_000)
    assert "more than 25,000 values" in str(access(4_500).broken)


@pytest.mark.parametrize(
    ("said", "front", "refused"),
    [
        pytest.param(
            "an alias inside the node it names (`&a [*a]`)",
            "k: &a [*a]\n",
            "stands inside the node it names",
            id="alias-inside",
        ),
        pytest.param(
            "an anchor defined twice",
            "k: &a 1\nj: &a 2\n",
            "the anchor &a is defined twice",
            id="anchor-twice",
        ),
        pytest.param('`"\\0"`', 'k: "\\0"\n', "an escape makes a NUL", id="nul-escape"),
        pytest.param('`"\\ud800"`', 'k: "\\ud800"\n', "half of a surrogate pair", id="surrogate"),
        pytest.param("`2025-02-30`", "k: 2025-02-30\n", "'2025-02-30' is not a date", id="date"),
        pytest.param(
            "`!!bool maybe`", "k: !!bool maybe\n", "'maybe' is not a yes/no value", id="bool"
        ),
    ],
)
def test_what_the_page_also_refuses_is_refused(
    tmp_path: Path, said: str, front: str, refused: str
) -> None:
    also = " ".join(PAGE.split("Also refused:", 1)[1].split("\n\n", 1)[0].split())
    assert said in also
    reason = front_reason(tmp_path, front)
    assert reason is not None
    assert refused in reason


def test_a_colon_inside_a_flow_item_is_read_at_any_size(tmp_path: Path) -> None:
    assert "`[context:read]` (a colon inside a flow item) included, at any size" in PAGE
    brain = copy_reference(tmp_path / "brain")
    role = brain / "features" / "support" / "support.agent.md"
    text = role.read_text(encoding="utf-8")
    front, body = text.split("---\n", 2)[1:]
    padded = PADDING * 1000 + re.sub(
        r"^capabilities:.*$", "capabilities: [context:read]", front, flags=re.M
    )
    role.write_text(f"---\n{padded}---\n{body}", encoding="utf-8")
    got = load_brain(brain)
    assert "features/support/support.agent.md" not in {s.path for s in got.skips}
    assert "context:read" in got.roles["support"].capabilities
