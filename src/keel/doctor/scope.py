"""What every check reads: the brain, the schema, lines in files, and facts worked out once.

A finding names the line of the key or list item it is about. The loaded specs do not keep
lines (a turn never needs them), so doctor reads the frontmatter again and asks
`keel.brain.document.locate` — doctor is not a hot path, and a file that changed or vanished
since the load just gives no line.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from keel.brain.document import decode, locate, parse_yaml, split
from keel.brain.problems import suggest
from keel.brain.reading import read_file
from keel.brain.snapshot import Brain
from keel.brain.specs import EntitySpec
from keel.code.runner import CodeRunner
from keel.errors import ContentError, StateRefused
from keel.state.schema import Schema


@dataclass(frozen=True, slots=True)
class _Front:
    text: str
    first_line: int
    data: Any


class Lines:
    """Lines of keys and list items in brain files, each file read once."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._files: dict[str, _Front | None] = {}

    def key(self, path: str | None, *loc: str | int) -> int | None:
        """The line of the key or item at `loc` in the file's frontmatter (or YAML)."""
        front = self._front(path)
        if front is None:
            return None
        return locate(front.text, loc, first_line=front.first_line)

    def item(self, path: str | None, key: str, match: Callable[[Any], bool]) -> int | None:
        """The line of the first item of the list under `key` that `match` accepts."""
        front = self._front(path)
        if front is None or not isinstance(front.data, dict):
            return None
        items = front.data.get(key)
        if not isinstance(items, list):
            return None
        for index, value in enumerate(items):
            if match(value):
                return self.key(path, key, index)
        return self.key(path, key)

    def _front(self, path: str | None) -> _Front | None:
        if path is None:
            return None
        if path not in self._files:
            self._files[path] = self._read(path)
        return self._files[path]

    def _read(self, path: str) -> _Front | None:
        try:
            text = decode(path, read_file(str(self._root), path))
            if path.endswith((".yaml", ".yml")):
                return _Front(text, 1, parse_yaml(path, text))
            doc = split(path, text)
        except (OSError, ContentError):
            return None
        return _Front(doc.front_text, doc.front_line, doc.front)


def is_word(word: str) -> Callable[[Any], bool]:
    """Matches a list item that is this string."""
    return lambda value: value == word


def is_view(view: str) -> Callable[[Any], bool]:
    """Matches a `data:` item naming this view, written plain or as `{view, by}`."""
    return lambda value: value == view or (isinstance(value, dict) and value.get("view") == view)


def is_reach(context: str) -> Callable[[Any], bool]:
    """Matches a `reach:` item naming this context, plain or as `{context, entity}`."""
    return lambda value: (
        value == context or (isinstance(value, dict) and value.get("context") == context)
    )


# A capability's risk classes: those of the tools that hold it (from the caller's tool
# registry, which doctor does not import).
Risks = Mapping[str, frozenset[str]]


class Scope:
    """The inputs of one doctor run and what the checks share."""

    def __init__(
        self,
        brain: Brain,
        schema: Schema | None,
        db_note: str | None,
        *,
        runner: CodeRunner | None = None,
        probe: bool = False,
        reader: Connection | None = None,
        clock: Callable[[], float] = time.monotonic,
        refused: StateRefused | None = None,
        risks: Risks | None = None,
    ) -> None:
        self.brain = brain
        self.refused = refused
        self.risks: Risks = risks or {}
        self.schema = schema
        self.db_note = db_note
        self.runner = runner
        self.probe = probe
        self.reader = reader
        self.clock = clock
        self.lines = Lines(brain.root)
        reached: dict[str, list[EntitySpec]] = defaultdict(list)
        keyed: set[str] = set()
        for key in sorted(brain.entities):
            entity = brain.entities[key]
            for entry in brain.reach_of(entity):
                reached[entry.context].append(entity)
                if entry.entity is not None:
                    keyed.add(entry.context)
        # Context id -> the heartbeats, hooks and scenarios whose reach holds it.
        self.reached: dict[str, list[EntitySpec]] = dict(reached)
        # Contexts some entity's `reach:` names with an entity key of its own.
        self.keyed_reach = frozenset(keyed)
        self.admitted = frozenset(
            ident
            for ident in brain.contexts
            if any(role.admits(ident) for role in brain.roles.values())
        )
        self.bound = frozenset(
            ident for rule in brain.access.rules if rule.is_group for ident in rule.contexts
        )

    def absent(self, noun: str, suffix: str, name: str, choices: Iterable[str]) -> str:
        """Why `name` names nothing, in words: it failed to load, is switched off, or is unknown.

        `suffix` is the file ending of that kind (`.agent.md`), to find a skipped file.
        """
        for skip in self.brain.skips:
            if skip.path.rsplit("/", 1)[-1] == f"{name}{suffix}":
                return f"{noun} '{name}' did not load ({skip.path} is skipped, see entity.skip)"
        feature = self.brain.switched_off.get(name)
        if feature is not None and suffix == ".context.md":
            return (
                f"{noun} '{name}' belongs to feature '{feature}', which is switched off "
                "(enabled: false in its FEATURE.md)"
            )
        return f"no {noun} is named '{name}'{maybe(name, choices)}"


def maybe(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` when a close name exists, else nothing."""
    near = suggest(word, sorted(set(choices)))
    return f" (did you mean '{near}'?)" if near is not None else ""


def quoted(names: Iterable[str]) -> str:
    """`'a', 'b' and 'c'`."""
    items = [f"'{n}'" for n in names]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
