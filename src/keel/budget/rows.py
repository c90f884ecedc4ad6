"""The rows one view showed for one turn: a plain value the pure stages render and fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewRows:
    """The rows one view showed for one turn, and how many it holds in all.

    `problem` is set instead of rows when the view could not be read (or, for a `by`
    view, when the link carries no key): the renderer stubs the view and says why.
    """

    view: str
    by: str | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    total: int = 0
    problem: str | None = None
