"""`keel turn`'s notes: the same advice once, after the notes it follows."""

from __future__ import annotations

import io

from rich.console import Console

from keel.cli.turn_view import grouped_notes, print_notes

HANG = (
    "match ran past its 2000 ms timeout (it was at this line) — make it return sooner; until "
    "then it links nothing"
)
ADVICE = "make it return sooner; until then it links nothing"


def test_notes_with_the_same_advice_share_one_line_of_it() -> None:
    notes = [
        "reply to m9: not a message this bot sent here, links nothing",
        f"features/f/a.context.py:6: {HANG}",
        "features/f/t.context.py: match said: looking",
        f"features/f/b.context.py:7: {HANG}",
        f"features/f/b.context.py:7: {HANG}",  # the same call twice: one line
        "features/f/c.context.py:2: match raised ValueError: boom — fix the code",
    ]
    assert grouped_notes(notes) == [
        (("reply to m9: not a message this bot sent here, links nothing",), None),
        (
            (
                "features/f/a.context.py:6: match ran past its 2000 ms timeout (it was at this "
                "line)",
                "features/f/b.context.py:7: match ran past its 2000 ms timeout (it was at this "
                "line)",
            ),
            ADVICE,
        ),
        (("features/f/t.context.py: match said: looking",), None),
        (("features/f/c.context.py:2: match raised ValueError: boom — fix the code",), None),
    ]


def test_a_note_repeated_word_for_word_alone_stays_whole() -> None:
    note = f"features/f/a.context.py:6: {HANG}"
    assert grouped_notes([note, note]) == [((note,), None)]


def test_six_hanging_matches_print_six_lines_and_the_advice_once() -> None:
    out = Console(file=io.StringIO(), width=200, highlight=False)
    print_notes(out, [f"features/f/h{n}.context.py:6: {HANG}" for n in range(6)])
    text = out.file.getvalue()  # type: ignore[attr-defined]
    lines = text.splitlines()
    assert len(lines) == 7
    assert all(line.startswith("note: features/f/h") for line in lines[:6])
    assert lines[6].strip() == f"↳ each of these 6: {ADVICE}"
    assert text.count("make it return sooner") == 1
