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
