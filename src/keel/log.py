"""Keel's loggers: `keel.*`, silent unless the application configures logging.

Keel logs what operators may want to know (a refused link, a dropped attach, brain code that
failed); without a handler of the application's, Python would print those warnings to
stderr on its own, interleaved with a command's output. A library leaves that choice to
its host, so the `keel` logger gets a handler that does nothing.
"""

from __future__ import annotations

import logging

logging.getLogger("keel").addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """The logger `keel.<name>`."""
    return logging.getLogger(f"keel.{name}")


# Control characters — C0, DEL, C1, the line and paragraph separators, and the bidi
# controls that reorder what a terminal shows — as escapes, so a key with a newline in it
# writes one log line, not two that could pass for Keel's own, and stored text printed to a
# terminal cannot move the cursor, clear the screen or hide what follows it.
_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_ESCAPES |= {code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *_BIDI)}
_ESCAPES |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
# The same, keeping line breaks and tabs: for text printed as the lines it has.
_LINES = {code: escape for code, escape in _ESCAPES.items() if code not in (0x0A, 0x09)}
LONGEST = 500


def printable(text: str, *, lines: bool = False) -> str:
    """Text with its control characters written as escapes (`\\x1b`, `\\n`); with `lines`,
    its line breaks and tabs stay."""
    return text.translate(_LINES if lines else _ESCAPES)


def shown(value: object) -> str:
    """A value as it may be written into a log line: on one line, and not too long."""
    text = str(value).translate(_ESCAPES)
    return text if len(text) <= LONGEST else f"{text[:LONGEST]}… ({len(text)} characters)"
