"""Rendering one attached context into its `<context>` block, within its `chars`.

The block holds the instructions first, whole, then one `<view>` per view. The markup is
as light as it can be while the model still tells contexts, entities and views apart: one
opening tag naming the context and its entity, the instructions as plain text, and a tag
per view (docs/prompt.md). Instructions are
never cut: half a rule reads as the whole rule. Views are cut by rows, with a marker
saying how many more exist; a view that cannot show one row is stubbed in its place. If
the instructions and the smallest form of every view do not fit, the whole context
becomes a one-line stub (see `keel.budget.fit`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from keel.budget.rows import ViewRows


def attr(value: str) -> str:
    """A value safe inside a double-quoted attribute (entity keys come from users)."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def inline(value: str) -> str:
    """A value safe as text inside a tag: it can close no tag (keys come from users)."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# The tags Keel writes around what it carries (`context-stub`, `context-withdrawn` too).
_KEEL_TAG = re.compile(r"<(?=\s*/?\s*(?:context|view|section|agent-state)(?!\w))", re.IGNORECASE)


def unforgeable(text: str) -> str:
    """Text that opens or closes none of Keel's tags: instructions, code sections, requests.

    Only the `<` that would start one of Keel's own tags is escaped, so other markup an
    author writes (HTML, generics) reads as written, and a block ends only where Keel ends it.
    """
    return _KEEL_TAG.sub("&lt;", text)


def cell(value: Any) -> str:
    """One table cell on one line: no newlines, no column separators, no tags."""
    if value is None:
        return ""
    text = value.isoformat() if isinstance(value, datetime | date) else str(value)
    return (
        text.replace("\\", "\\\\")
        .replace("\n", "\\n")
        .replace("\r", "")
        .replace("|", "\\|")
        .replace("<", "&lt;")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A rendered context: its text and size, and which views were cut or stubbed."""

    text: str
    cut_views: tuple[str, ...] = ()
    stubbed_views: tuple[str, ...] = ()
    # The block in pieces, for sessions that re-send only what changed: the opening tag,
    # ("instructions", text) then (view name, text) per view, the closing tag.
    head: str = ""
    parts: tuple[tuple[str, str], ...] = ()
    tail: str = ""
    # The text's length, measured once: the fit, the ledger and the journal each read it.
    chars: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chars", len(self.text))


def open_tag(tag: str, context: str, entity: str | None) -> str:
    """`<tag name=... entity=...>`: which context, and for which entity.

    The feature and the link that brought it are left to the ledger and the terminal: the
    model needs neither to tell one context, entity or view from another.
    """
    key = f' entity="{attr(entity)}"' if entity is not None else ""
    return f'<{tag} name="{context}"{key}>'


def _view_tag(rows: ViewRows) -> str:
    return f'<view name="{rows.view}">'


def view_stub(rows: ViewRows) -> str:
    """The one-line form of a view: why it shows no rows here."""
    if rows.problem is not None:
        why = unforgeable(rows.problem)
    elif rows.total == 0:
        return f"{_view_tag(rows)}(no rows)</view>"
    else:
        noun = "row" if rows.total == 1 else "rows"
        why = f"{rows.total} {noun}, not shown: no room left in this context"
    return f"{_view_tag(rows)}{why}</view>"


def _view_text(rows: ViewRows, room: int) -> tuple[str, bool] | None:
    """The view with as many rows as fit in `room` characters, and whether rows were cut."""
    if rows.problem is not None or rows.total == 0:
        return None
    head = f"{_view_tag(rows)}\n{' | '.join(cell(c) for c in rows.columns)}\n"
    tail = "</view>"
    lines: list[str] = []
    used = len(head) + len(tail)
    for row in rows.rows:
        line = " | ".join(cell(v) for v in row) + "\n"
        hidden = rows.total - len(lines) - 1
        marker = _marker(hidden) if hidden > 0 else ""
        if used + len(line) + len(marker) > room:
            break
        lines.append(line)
        used += len(line)
    if not lines:
        return None
    hidden = rows.total - len(lines)
    return head + "".join(lines) + (_marker(hidden) if hidden else "") + tail, hidden > 0


def _marker(hidden: int) -> str:
    noun = "row" if hidden == 1 else "rows"
    return f"({hidden} more {noun} not shown)\n"


MISSING_SECTIONS = "(this context's code sections are missing: its code failed)\n"


def section_stub(key: str, more_room: str | None = None) -> str:
    """The one-line form of a code section with no room left in its context; `more_room`
    says which setting gives the context more (`raise chars: 600 of x.context.md`)."""
    how = f" — {inline(more_room)}" if more_room else ""
    return f'<section name="{attr(key)}">not shown: no room left in this context{how}</section>'


def render_block(
    *,
    context: str,
    entity: str | None,
    instructions: str,
    views: Sequence[ViewRows],
    chars: int,
    sections: Sequence[tuple[str, str]] = (),
    sections_missing: bool = False,
    more_room: str | None = None,
    opened: bool = False,
) -> Block | None:
    """The context's block within `chars`, or None when it cannot fit even in brief.

    `opened`: the agent asked for this context by name (`context_open`), so instructions
    longer than `chars` are still delivered whole, every view and section a stub after them.

    `sections` are the context's code sections, (key, text), placed after the views in
    what is left of `chars`; one that does not fit is a one-line stub under its key, which
    says `more_room` (the setting of `chars` to raise) when given.
    `sections_missing` says the code that makes them failed: one line says so instead.
    """
    head = open_tag("context", context, entity) + "\n"
    body = f"{unforgeable(instructions)}\n"
    tail = "</context>"
    stubs = [view_stub(v) + "\n" for v in views]
    section_stubs = [section_stub(key, more_room) + "\n" for key, _ in sections]
    if sections_missing:
        section_stubs.append(MISSING_SECTIONS)
    reserved = sum(len(s) for s in (*stubs, *section_stubs))
    room = chars - len(head) - len(body) - len(tail) - reserved
    if room < 0 and not opened:
        return None
    room = max(room, 0)
    parts: list[tuple[str, str]] = [("instructions", body)]
    cut: list[str] = []
    stubbed: list[str] = []
    for rows, stub in zip(views, stubs, strict=True):
        shown = _view_text(rows, room + len(stub) - 1)
        if shown is None:
            parts.append((rows.view, stub))
            if rows.problem is not None or rows.total:
                stubbed.append(rows.view)
            continue
        text, was_cut = shown
        parts.append((rows.view, text + "\n"))
        room -= len(text) + 1 - len(stub)
        if was_cut:
            cut.append(rows.view)
    for (key, text), stub in zip(sections, section_stubs, strict=False):
        whole = f'<section name="{attr(key)}">\n{unforgeable(text)}\n</section>\n'
        if len(whole) - len(stub) <= room:
            parts.append((key, whole))
            room -= len(whole) - len(stub)
        else:
            parts.append((key, stub))
            stubbed.append(key)
    if sections_missing:
        parts.append(("sections", MISSING_SECTIONS))
    return Block(
        text=head + "".join(text for _, text in parts) + tail,
        head=head,
        parts=tuple(parts),
        tail=tail,
        cut_views=tuple(cut),
        stubbed_views=tuple(stubbed),
    )
