"""Turning pydantic's validation errors into messages a brain author can act on.

Each message names the key (and its line), the value seen and the fix; an unknown key or
`when` word comes with the nearest real one (`whne` → `when`, `reploy` → `reply`). The
wording helpers here (`did_you_mean`, `plural`) serve every message Keel writes.
"""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from keel.brain.document import Locator
from keel.brain.limits import MAX_PROBLEMS
from keel.brain.schema import UNION_TAGS
from keel.errors import ContentError

# pydantic's bound errors: the context key holding the bound, and how to say it.
_BOUNDS = {
    "less_than_equal": ("le", "above the limit of"),
    "less_than": ("lt", "not below"),
    "greater_than_equal": ("ge", "below the minimum of"),
    "greater_than": ("gt", "not above"),
}


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest of `choices` to a misspelt `word`, if one is close enough."""
    if len(word) > 100:  # nothing that long is a misspelling of a key or a word
        return None
    return _closest(word, tuple(choices))


@functools.lru_cache(maxsize=1024)
def _closest(word: str, choices: tuple[str, ...]) -> str | None:
    # Cached: a file that repeats one misspelling in a thousand rules asks a thousand times.
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def plural(count: int, noun: str) -> str:
    """`1 run`, `2 runs`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` — did you mean 'x'?` when a close choice exists, else the list of choices."""
    options = sorted(set(choices))
    near = suggest(word, options)
    if near is not None:
        return f" — did you mean '{near}'?"
    return f" — expected one of: {', '.join(options)}" if options else ""


def validation_errors(
    path: str,
    model: type[BaseModel],
    error: ValidationError,
    *,
    text: str,
    first_line: int,
    prefix: tuple[str | int, ...] = (),
    locator: Locator | None = None,
) -> list[ContentError]:
    """One `ContentError` per problem pydantic found, in file order, at most `MAX_PROBLEMS`.

    `prefix` is where the validated value sits in the file (a rule of access.yaml is
    validated on its own), so lines and key paths name the whole path.
    """
    locator = locator or Locator(text, first_line=first_line)
    details = error.errors()
    # A misspelt key also leaves its real key missing; the did-you-mean says both. Only
    # the first few unknown keys are looked at: a file of 20,000 of them needs no more.
    suggested = {
        (
            _data_loc(d["loc"])[:-1],
            suggest(str(d["loc"][-1]), _keys_at(model, _data_loc(d["loc"])[:-1])),
        )
        for d in [d for d in details if d["type"] == "extra_forbidden"][: 5 * MAX_PROBLEMS]
    }
    kept = [
        d
        for d in details
        if not (d["type"] == "missing" and _split(_data_loc(d["loc"])) in suggested)
    ]
    found = [
        ContentError(
            path,
            _message(model, d, loc, prefix),
            line=locator.line(prefix + loc) if prefix + loc else None,
        )
        for d in kept[:MAX_PROBLEMS]
        for loc in [_data_loc(d["loc"]) + _at(d)]
    ]
    found.sort(key=lambda e: e.line or 0)
    if len(kept) > MAX_PROBLEMS:
        found.append(
            ContentError(
                path,
                f"... and {len(kept) - MAX_PROBLEMS:,} more problems — fix these first",
                line=found[-1].line,
            )
        )
    return found


def _at(detail: ErrorDetails) -> tuple[str, ...]:
    """The key inside the value that a validator's error is about (its `at`), if named."""
    at = (detail.get("ctx") or {}).get("at")
    return (at,) if isinstance(at, str) else ()


def _split(loc: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], str | int]:
    return loc[:-1], loc[-1]


def _data_loc(loc: tuple[int | str, ...]) -> tuple[str | int, ...]:
    """The path into the YAML data, without pydantic's union-member tags."""
    return tuple(step for step in loc if step not in UNION_TAGS)


def _key_path(loc: Sequence[str | int]) -> str:
    return short(".".join(str(s) for s in loc), 120) if loc else "(top level)"


def _message(
    model: type[BaseModel],
    detail: ErrorDetails,
    loc: tuple[str | int, ...],
    prefix: tuple[str | int, ...] = (),
) -> str:
    kind = detail["type"]
    seen = detail.get("input")
    full = prefix + loc
    if kind == "extra_forbidden":
        key = short(loc[-1])
        known = _keys_at(model, loc[:-1])
        where = f" under '{_key_path(full[:-1])}'" if len(full) > 1 else ""
        if key == "contexts" and len(full) > 1 and full[-2] in ("default", "dm"):
            return (
                f"'contexts:' under '{_key_path(full[:-1])}' is refused: a bot-default or DM "
                "rule is a template for many chats — bind contexts in a group rule under "
                "'chats:' instead"
            )
        return f"unknown key '{key}'{where}{did_you_mean(key, known)}"
    if kind == "missing":
        return _missing(full)
    if kind == "literal_error":
        words = _literal_words(model, loc)
        if loc and loc[0] == "when":
            return f"unknown when word '{short(seen)}'{did_you_mean(str(seen), words)}"
        return f"'{_key_path(full)}' cannot be '{short(seen)}'{did_you_mean(str(seen), words)}"
    if kind == "value_error":
        return f"'{_key_path(full)}': {detail['msg'].removeprefix('Value error, ')}"
    if kind == "string_pattern_mismatch":
        return (
            f"'{_key_path(full)}' is '{short(seen)}', which is not a valid name — use "
            "letters, digits, '_' and '-' (views and columns: letters, digits and '_')"
        )
    if kind in _BOUNDS:
        return _out_of_range(_key_path(full), seen, detail, *_BOUNDS[kind])
    if kind == "model_type":
        return _not_a_mapping(model, loc, full, seen)
    return f"'{_key_path(full)}' {_lower_first(detail['msg'])} (got {_show(seen)})"


def _missing(full: tuple[str | int, ...]) -> str:
    if len(full) > 1:
        key = short(full[-1])
        return f"missing key '{key}' under '{_key_path(full[:-1])}' — add '{key}:' there"
    return f"missing key '{_key_path(full)}' — add it to the frontmatter"


def _not_a_mapping(
    model: type[BaseModel], loc: tuple[str | int, ...], full: tuple[str | int, ...], seen: Any
) -> str:
    """A value that must be a mapping of a model's keys (pydantic would name the model's
    class, which means nothing in a brain's file)."""
    if not loc:
        return "the frontmatter must be a mapping of keys to values"
    keys = _keys_at(model, loc)
    fields = [f for m in _models_in(_annotation_at(model, loc)) for f in m.model_fields.items()]
    needed = [f"'{name}:'" for name, field in fields if field.is_required()]
    fix = f" — write {_and(needed)} under '{short(full[-1])}:'" if needed else ""
    return f"'{_key_path(full)}' must be a mapping of {_and(keys)}, not {_show(seen)}{fix}"


def _and(words: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(filter(None, (", ".join(words[:-1]), *words[-1:])))


def _out_of_range(key: str, seen: Any, detail: ErrorDetails, bound: str, words: str) -> str:
    limit = (detail.get("ctx") or {}).get(bound)
    shown = f"{limit:,}" if isinstance(limit, int) else str(limit)
    fix = "a smaller" if bound in ("le", "lt") else "a larger"
    return f"'{key}' is {_show(seen)}, {words} {shown} (docs/limits.md) — use {fix} value"


def short(value: Any, width: int = 60) -> str:
    """A value as text, cut to `width` characters with '...' when longer."""
    text = str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _show(value: Any) -> str:
    """A value as a message shows it: long ones shortened, long numbers by their size."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        digits = str(abs(value))  # at most MAX_INT_DIGITS, so str() is safe and cheap
        return f"{'-' if value < 0 else ''}{digits[:6]}...{digits[-3:]} ({len(digits)} digits)"
    return short(repr(value))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Every BaseModel inside an annotation (through Optional, unions, lists and dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _literals_in(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is Literal:
        return [str(a) for a in typing.get_args(annotation)]
    found: list[str] = []
    for arg in typing.get_args(annotation):
        found.extend(_literals_in(arg))
    return found


def _annotation_at(model: type[BaseModel], loc: Sequence[str | int]) -> Any:
    """The annotation that governs the value at `loc`, walking nested models."""
    current: Any = model
    for step in loc:
        if isinstance(step, int):
            continue
        models = _models_in(current)
        for candidate in models:
            if step in candidate.model_fields:
                current = candidate.model_fields[step].annotation
                break
            extra = _extra_values(candidate)
            if extra is not None:  # a key the model takes as an extra (approvals' capabilities)
                current = extra
                break
        else:
            # A dict key (e.g. a bot name): the value type is the dict's second argument.
            args = [a for a in _flatten(current) if typing.get_origin(a) is dict]
            if not args:
                return None
            current = typing.get_args(args[0])[1]
    return current


@functools.cache
def _extra_values(model: type[BaseModel]) -> Any:
    """The type of a model's extra keys' values, when it takes extra keys of a typed kind."""
    if model.model_config.get("extra") != "allow":
        return None
    hint = typing.get_type_hints(model).get("__pydantic_extra__")
    if typing.get_origin(hint) is not dict:
        return None
    return typing.get_args(hint)[1]


def _flatten(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [x for a in typing.get_args(annotation) for x in _flatten(a)]
    if origin is list:
        return [x for a in typing.get_args(annotation) for x in _flatten(a)]
    return [annotation]


def _keys_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    annotation = _annotation_at(model, loc)
    return [k for m in _models_in(annotation) for k in m.model_fields]


def _literal_words(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    return _literals_in(_annotation_at(model, loc))
