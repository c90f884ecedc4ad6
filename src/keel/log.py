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


# Control characters (and the line and paragraph separators) as escapes, so a key with a
# newline in it writes one log line, not two that could pass for Keel's own.
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)}
_ESCAPES |= {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
LONGEST = 500


def shown(value: object) -> str:
    """A value as it may be written into a log line: on one line, and not too long."""
    text = str(value).translate(_ESCAPES)
    return text if len(text) <= LONGEST else f"{text[:LONGEST]}… ({len(text)} characters)"
