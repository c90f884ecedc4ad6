"""What the two dialects' `ctx.query` readers share: the shape of a statement's parameters
and rows, the row limit, and how a name from the catalog is quoted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_ROWS = 10_000
Params = Mapping[str, Any] | Sequence[Any] | None
# The statement's column names, and its rows (at most MAX_ROWS + 1: one more says "too many").
Rows = tuple[tuple[str, ...], list[tuple[Any, ...]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """The room's tenant as a query is kept to it: the column, and the key (None: no
    tenant's rows at all)."""

    column: str
    key: str | None


def quoted(name: str) -> str:
    """A name from the database's own catalog, quoted as an identifier."""
    return '"' + name.replace('"', '""') + '"'


# An identifier as both databases write one: quoted, or a letter or _ then letters, digits,
# _ and $ (any alphabet: `\w` is Unicode here).
IDENT = r'(?:"(?:[^"]|"")+"|[^\W\d][\w$]*)'
_WORD = re.compile(IDENT)


def named(sql: str) -> set[str]:
    """Every name a statement's text holds, case-folded (quotes taken off).

    Strings and comments are read as names too, and case is ignored: what uses this may
    do more than needed, never less.
    """
    return {folded(m.group(0)) for m in _WORD.finditer(sql)}


def folded(name: str) -> str:
    """An identifier as written, without its quotes, case-folded."""
    if name.startswith('"'):
        name = name[1:-1].replace('""', '"')
    return name.casefold()
