"""Context ids for imported rules: readable, valid, unique across the brain, and stable.

An id is built from the tool and the rule's place (`cursor-testing`, `claude-skill-pdf`,
`agents-md-frontend`). When another context of the brain already has it, the rule takes
`-2`, `-3`, ... in source-path order; a rule that a previous run already gave an id keeps
it while it is free, so ids do not shift when unrelated files come and go.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from keel.brain.schema import ID_PATTERN

_ID = re.compile(ID_PATTERN)
MAX_ID = 100


def slug(*parts: str) -> str:
    """`parts` joined as one id: lower case, runs of other characters as one `-`."""
    words = [re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts]
    text = "-".join(w for w in words if w)[:MAX_ID].strip("-")
    return text or "rule"


def is_id(text: str) -> bool:
    """Whether `text` is a usable brain id (letters, digits, `_`, `-`)."""
    return _ID.match(text) is not None and len(text) <= 128


def assign(
    wanted: Sequence[tuple[str, str]],
    *,
    taken: Collection[str],
    previous: Mapping[str, str],
) -> dict[str, str]:
    """An id for each `(source, name)`, in source order: its own, or `name-N` when taken."""
    used = set(taken)
    ids: dict[str, str] = {}
    ordered = sorted(wanted)
    for source, name in ordered:
        old = previous.get(source)
        if old is not None and old not in used and _derived(old, name):
            ids[source] = old
            used.add(old)
    for source, name in ordered:
        if source in ids:
            continue
        candidate, n = name, 2
        while candidate in used:
            candidate, n = f"{name}-{n}", n + 1
        ids[source] = candidate
        used.add(candidate)
    return ids


def _derived(ident: str, name: str) -> bool:
    return ident == name or re.fullmatch(re.escape(name) + r"-\d+", ident) is not None
