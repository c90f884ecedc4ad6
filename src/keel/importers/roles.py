"""`--role R`: the role that admits the imported contexts, found or created.

An existing `<R>.agent.md` anywhere under `features/` gets the imported ids added to its
`contexts:` list, and the ids this run removed taken out of it; the rest of the file — keys,
comments, the persona — is kept (the frontmatter is edited in ruamel's round-trip mode). A
role that admits `'*'` already admits them. Without such a file the import creates
`features/<feature>/<R>.agent.md`: a CLI coding agent that may open contexts.

Always-on rules need room: a turn carries at most `maxActive` contexts, and the links a
turn's files or opens bring come before `always` ones, so a role holding as many always-on
rules as `maxActive` would see them stubbed as soon as a file rule matched. The role's
`contexts_budget.maxActive` is raised to what it needs (`Room`) — never lowered, so a
value its author set higher stays.

Role files are read through the brain's reader (`keel.brain.reading.read_file`), so a role
file that is a FIFO, a link out of the brain or too big is refused, not waited on or read.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from keel.brain.document import parse_yaml
from keel.brain.reading import read_file
from keel.errors import ContentError
from keel.importers.generated import role_text
from keel.importers.owned import ROLE, BrainFiles
from keel.importers.report import RoleChange
from keel.importers.rules import Notice

CATALOG = "context.catalog"  # the section that lists the ask contexts


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """The contexts a turn of the role must be able to carry, and what it carries now.

    `needed`: the `maxActive` the role should have at least (0: nothing to raise);
    `default`: what a role that sets no `maxActive` gets (the MANIFEST's, else Keel's).
    """

    needed: int = 0
    default: int = 0
    # The same for `turnChars`: the characters of the always-on rules on top of a turn's.
    chars_needed: int = 0
    chars_default: int = 0
    # And the catalog section's budget (tokens), for the lines of the ask contexts.
    catalog_needed: int = 0
    catalog_default: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RolePlan:
    """What to write for the role (None: nothing), and what to say about it."""

    change: RoleChange | None = None
    path: str | None = None
    text: str | None = None
    warnings: tuple[Notice, ...] = ()
    refused: tuple[Notice, ...] = ()


def plan_role(
    root: Path,
    role: str,
    *,
    feature: str,
    source_name: str,
    files: BrainFiles,
    add: Sequence[str],
    drop: Sequence[str],
    asks: bool,
    room: Room = Room(),
) -> RolePlan:
    """Add `add` to the role's `contexts:` and take `drop` out, or create the role; raise its
    `contexts_budget.maxActive` to `room.needed` when it is lower."""
    paths = files.roles.get(role, ())
    if len(paths) > 1:
        reason = (
            f"role '{role}' is defined by {len(paths)} files ({', '.join(paths)}), so none "
            "of them loads — rename all but one, then re-run; its contexts: were not changed"
        )
        return RolePlan(refused=(Notice(path=paths[0], message=reason),))
    if not paths:
        path = f"features/{feature}/{role}{ROLE}"
        raised = room.needed if room.needed > room.default else None
        chars = room.chars_needed if room.chars_needed > room.chars_default else None
        catalog = room.catalog_needed if room.catalog_needed > room.catalog_default else None
        change = RoleChange(
            role=role,
            path=path,
            created=True,
            added=tuple(add),
            max_active=raised,
            turn_chars=chars,
            catalog_tokens=catalog,
        )
        text = role_text(
            role, source_name, add, max_active=raised, turn_chars=chars, catalog_tokens=catalog
        )
        return RolePlan(change=change, path=path, text=text)
    path = paths[0]
    try:
        text = _read(root, path)
    except (ContentError, UnicodeDecodeError) as exc:
        reason = exc.reason if isinstance(exc, ContentError) else f"not UTF-8: {exc}"
        return _refuse(
            path, f"cannot read the role file ({reason}); its contexts: were not changed"
        )
    edited = _edit(text, add, drop, room)
    if isinstance(edited, str):
        return _refuse(path, f"{edited}; its contexts: were not changed — add the ids by hand")
    warnings = _capabilities(path, role, edited.front) if asks else ()
    change = RoleChange(
        role=role,
        path=path,
        created=False,
        added=edited.added,
        dropped=edited.dropped,
        max_active=edited.raised,
        turn_chars=edited.raised_chars,
        catalog_tokens=edited.raised_catalog,
    )
    return RolePlan(change=change, path=path, text=edited.text, warnings=warnings)


def listing(root: Path, paths: Sequence[str], ids: Sequence[str]) -> tuple[Notice, ...]:
    """Warnings for roles that still list ids the import removed."""
    gone = set(ids)
    found: list[Notice] = []
    for path in paths:
        try:
            front = _split(_read(root, path))
        except (ContentError, UnicodeDecodeError, ValueError):
            continue
        listed = front[1].get("contexts") if front is not None else None
        stale = sorted(gone & {str(c) for c in listed}) if isinstance(listed, list) else []
        if stale:
            found.append(
                Notice(
                    path=path,
                    message=f"lists {', '.join(stale)}, which this import removed (their source "
                    "rules are gone) — take them out of contexts:",
                )
            )
    return tuple(found)


def _read(root: Path, path: str) -> str:
    return read_file(str(root.resolve()), path).decode("utf-8")


def _refuse(path: str, reason: str) -> RolePlan:
    return RolePlan(refused=(Notice(path=path, message=reason),))


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _split(text: str) -> tuple[list[str], Any, str] | None:
    """The frontmatter lines' positions, the parsed frontmatter, and the rest of the file."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return None
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if close is None:
        return None
    text = "".join(lines[1:close])
    # The brain's bounded parser first (depth, size, aliases): ruamel's round-trip loader,
    # which keeps the comments, has no bounds of its own.
    parse_yaml("role", text, first_line=2)
    try:
        front = _yaml().load(text) or CommentedMap()
    except YAMLError as exc:
        raise ContentError("role", str(exc).splitlines()[0]) from None
    return lines[: close + 1], front, "".join(lines[close + 1 :])


@dataclass(frozen=True, slots=True)
class _Edited:
    """The role file after the edit, its frontmatter, and what changed in it."""

    text: str
    front: Any
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    raised: int | None = None
    raised_chars: int | None = None
    raised_catalog: int | None = None


def _edit(text: str, add: Sequence[str], drop: Sequence[str], room: Room) -> _Edited | str:
    try:
        split = _split(text)
    except ContentError as exc:
        return f"its frontmatter does not parse ({exc.reason})"
    if split is None:
        return "it has no frontmatter between '---' lines"
    _, front, rest = split
    if not isinstance(front, CommentedMap):
        return "its frontmatter is not a mapping of keys to values"
    listed = front.get("contexts")
    if listed is None:
        listed = CommentedSeq()
        front["contexts"] = listed
    if not isinstance(listed, list):
        return "its contexts: is not a list"
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    if "*" not in listed:  # a role that admits every context already admits these
        gone = set(drop)
        dropped = tuple(c for c in listed if c in gone)
        for ident in dropped:
            listed.remove(ident)
        added = tuple(a for a in add if a not in listed)
        listed.extend(added)
    results = (
        _raise(front, "maxActive", room.needed, room.default),
        _raise(front, "turnChars", room.chars_needed, room.chars_default),
        _raise(front, CATALOG, room.catalog_needed, room.catalog_default, within="sections"),
    )
    problem = next((r for r in results if isinstance(r, str)), None)
    if problem is not None:
        return problem
    raised, chars, catalog = (None if isinstance(r, str) else r for r in results)
    if not added and not dropped and (raised, chars, catalog) == (None, None, None):
        return _Edited(text, front)
    out = io.StringIO()
    _yaml().dump(front, out)
    new = "---\n" + out.getvalue() + "---\n" + rest
    return _Edited(new, front, added, dropped, raised, chars, catalog)


def _raise(
    front: CommentedMap, key: str, needed: int, default: int, *, within: str = "contexts_budget"
) -> int | str | None:
    """Set `<within>.<key>` to `needed` when the role allows less; the value set, None when
    it already has room, or why the file cannot be changed."""
    budget = front.get(within)
    current = budget.get(key) if isinstance(budget, dict) else None
    if current is not None and (not isinstance(current, int) or isinstance(current, bool)):
        return None  # not a number: the loader refuses the file and says so; left as written
    if needed <= (default if current is None else current):
        return None
    if budget is None:
        budget = CommentedMap()
        front[within] = budget
    if not isinstance(budget, dict):
        return f"its {within}: is not a mapping"
    budget[key] = needed
    return needed


def _capabilities(path: str, role: str, front: Any) -> tuple[Notice, ...]:
    capabilities = front.get("capabilities") if isinstance(front, dict) else None
    granted = {str(c) for c in capabilities} if isinstance(capabilities, list) else set()
    if "*" in granted or "context:read" in granted:
        return ()
    return (
        Notice(
            path=path,
            message=f"role '{role}' cannot open ask contexts (no context:read in "
            "capabilities:), so only the files a turn names bring the imported ask rules — "
            "add context:read",
        ),
    )
