"""How the run commands print runs for people: `keel runs`' table, a run's record, its
cards; sized to the terminal, every id whole, and what people or models wrote printed as
text (never as markup), once."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from keel.brain.people import approve_as
from keel.brain.snapshot import Brain
from keel.cli.root import console
from keel.state.database import shown

# The space rich puts between two columns of a borderless table.
GAP = 2
# The narrowest a cut column gets before another column gives way to it.
CUT_MIN = 12
# What a narrow terminal gives up first in `keel runs`: the id says what it is a run of,
# and `keel runs BRAIN show ID` says the rest.
RUNS_DROP = ("run", "chat", "error", "started")
STATUS_STYLE = {"done": "green", "failed": "red", "waiting": "yellow"}


def indented(text: str, indent: int = 2) -> Indented:
    """`text` as a block whose wrapped lines stay under its first."""
    return Indented(Text(text), indent)


@dataclass(frozen=True, slots=True)
class Indented:
    """A text indented, each line wrapped under its start and ended where its words end:
    a grid would pad every line to the terminal's width with spaces, which a copied list
    (a widget's lines) would carry along."""

    text: Text
    indent: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        margin = Segment(" " * self.indent)
        width = max(1, options.max_width - self.indent)
        for line in self.text.wrap(console, width, overflow="fold"):
            line.rstrip()
            yield margin
            yield from line.render(console, end="")
            yield Segment.line()


def one_line(text: str) -> str:
    return " ".join(text.split())


def fitted(
    width: int,
    rows: Sequence[Mapping[str, str | Text]],
    columns: Sequence[str],
    *,
    cut: str,
    drop: Sequence[str] = (),
) -> Table:
    """A borderless table of `rows` in `width` columns that never cuts a cell but `cut`'s.

    Each column is as wide as its widest cell. The columns in `drop` give way, in order,
    until the rest fit; `cut` then takes the width left, each of its cells on one line,
    cut with … (left to itself, rich would shrink the id columns too). When even the rest
    cannot fit, their cells fold onto more lines, every character kept.
    """
    cells = [{c: _text(r[c]) for c in columns} for r in rows]
    natural = {c: max([len(c), *(cell[c].cell_len for cell in cells)]) for c in columns}
    shown = list(columns)

    def fixed() -> int:
        return sum(natural[c] for c in shown if c != cut) + GAP * (len(shown) - 1)

    def need() -> int:
        return fixed() + (min(natural[cut], CUT_MIN) if cut in shown else 0)

    for name in drop:
        if need() <= width:
            break
        shown.remove(name)
    fits = need() <= width
    table = Table(box=None, pad_edge=False)
    for c in shown:
        if c == cut:
            room = max(1, min(natural[c], width - fixed()))
            table.add_column(c, no_wrap=True, overflow="ellipsis", width=room)
        elif fits:
            table.add_column(c, no_wrap=True, width=natural[c])
        else:
            table.add_column(c, overflow="fold")
    for cell in cells:
        table.add_row(*(cell[c] for c in shown))
    return table


def _text(cell: str | Text) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def print_runs(out: Console, found: list[dict[str, Any]]) -> None:
    """The runs listing: every id whole, at any width."""
    rows = [
        {
            "id": r["id"],
            "run": r["run"],
            "status": status_text(r["status"]),
            "chat": r["chat"] or "",
            "started": r["created_at"][:19].replace("T", " "),
            "error": one_line(r["error"] or ""),
        }
        for r in found
    ]
    columns = ("id", "run", "status", "chat", "started", "error")
    out.print(fitted(out.width, rows, columns, cut="error", drop=RUNS_DROP))


def keel_command(verb: str, brain: Path, db: str | None) -> str:
    """`keel VERB BRAIN` as this command was given its brain and database."""
    words = ["keel", verb, shlex.quote(str(brain))]
    if db is not None:
        words += ["--db", shlex.quote(shown(db))]
    return " ".join(words)


def approve_prefix(brain: Path, db: str | None) -> str:
    """`keel approve BRAIN` as this command was given its brain and database."""
    return keel_command("approve", brain, db)


def print_record(
    record: dict[str, Any], *, approve_with: str = "keel approve BRAIN", brain: Brain | None = None
) -> None:
    """A run's record for a person: its header, a line per step, then each message, card
    and error in full, once. With the `brain`, a pending card's hint names who may decide
    it (`--as`) when `keel approve`'s default person may not."""
    out = console()
    head = Text("run ")
    head.append(record["id"], style="bold")
    head.append(f" · {record['run']} · ")
    head.append_text(status_text(record["status"]))
    out.print(head)
    place = [(k, record.get(k)) for k in ("role", "bot", "chat", "thread")]
    if any(v for _, v in place):
        out.print(Text(" · ".join(f"{k} {v}" for k, v in place if v)))
    rows = [
        {
            "#": str(s["seq"]),
            "step": s["name"],
            "status": status_text(s["status"]),
            "ms": "" if s["ms"] is None else f"{s['ms']:.1f}",
            "detail": one_line(s["detail"] or ""),
        }
        for s in record["steps"]
    ]
    out.print(fitted(out.width, rows, ("#", "step", "status", "ms", "detail"), cut="detail"))
    cards = {c["message_id"]: c for c in record["cards"]}
    for m in record["messages"]:
        card = cards.pop(m["message_id"], None)
        if card is not None:
            _print_card(out, record, card, m["text"], approve_with, brain)
            continue
        line = Text(f"sent {m['message_id']} to {m['chat']}")
        if m.get("thread"):
            line.append(f" · thread {m['thread']}")
        out.print(line)
        out.print(indented(m["text"]))
    for card in cards.values():  # a card whose message is not among the run's
        _print_card(out, record, card, card["summary"], approve_with, brain)
    if record["error"]:
        label = ("refused: ", "bold yellow") if record.get("refused") else ("error: ", "bold red")
        out.print(Text.assemble(label, record["error"]))


def _print_card(
    out: Console,
    record: dict[str, Any],
    card: dict[str, Any],
    text: str,
    approve_with: str,
    brain: Brain | None,
) -> None:
    line = Text(f"card {card['id']} · ")
    line.append_text(status_text(card["status"]))
    if card.get("decided_by"):
        line.append(f" by {card['decided_by']}")
    if card.get("note"):
        line.append(f" ({card['note']})")
    if (card["chat"], card.get("thread")) != (record.get("chat"), record.get("thread")):
        line.append(f" · sent to {card['chat']}")
        line.append(f" · thread {card['thread']}" if card.get("thread") else "")
    out.print(line)
    out.print(indented(text))
    for refused in card.get("refused") or ():
        who = refused["by"] or "someone unnamed"
        out.print(indented(f"refused {who}: {refused['reason']}"))
    if card["status"] == "pending":
        out.print(
            indented("waiting for a person: reply yes or no to the card, or run (--no to deny):")
        )
        who = None
        if brain is not None:
            who = approve_as(brain, record.get("role"), card["capability"], card["risk"])
        person = f" --as {who}" if who else ""
        # One line however narrow the terminal, so that it copies whole.
        out.print(Text(f"  {approve_with} {card['id']} --yes{person}"), soft_wrap=True)


# -- workers and approvals ------------------------------------------------------------------
