"""Keel's log lines: silent without a handler, one line per record whatever a key holds."""

from __future__ import annotations

import logging

from keel.log import LONGEST, logger, printable, shown


def test_control_characters_are_escaped_onto_one_line() -> None:
    assert shown("T-1\nERROR forged line\r\x1b[2J\u2028") == (
        "T-1\\nERROR forged line\\r\\x1b[2J\\u2028"
    )


def test_c1_and_bidi_controls_are_escaped_and_lines_may_stay() -> None:
    text = "a\x9b2J\u202eb\u2066c\nd\te\x00"
    assert printable(text) == "a\\x9b2J\\u202eb\\u2066c\\nd\\te\\x00"
    assert printable(text, lines=True) == "a\\x9b2J\\u202eb\\u2066c\nd\te\\x00"
    assert printable("ünïcode ok") == "ünïcode ok"


def test_a_huge_value_is_shortened_and_says_how_long_it_was() -> None:
    text = shown("x" * 10_000)
    assert text.startswith("x" * LONGEST)
    assert text.endswith("… (10000 characters)")


def test_keel_loggers_are_silent_without_the_applications_handler() -> None:
    assert logger("turn").name == "keel.turn"
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("keel").handlers)
