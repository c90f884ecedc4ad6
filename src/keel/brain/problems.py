"""Turning pydantic's validation errors into messages a brain author can act on.

Each message names the key (and its line), the value seen and the fix; an unknown key or
`when` word comes with the nearest real one (`whne` → `when`, `reploy` → `reply`).
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from keel.brain.document import locate
from keel.brain.schema import UNION_TAGS
from keel.errors import ContentError


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest of `choices` to a misspelt `word`, if one is close enough."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


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
) -> list[ContentError]:
    """One `ContentError` per problem pydantic found, in file order."""
    details = error.errors()
    # A misspelt key also leaves its real key missing; the did-you-mean says both.
    suggested = {
        (
            _data_loc(d["loc"])[:-1],
            suggest(str(d["loc"][-1]), _keys_at(model, _data_loc(d["loc"])[:-1])),
        )
        for d in details
        if d["type"] == "extra_forbidden"
    }
    found: list[ContentError] = []
    for detail in details:
        loc = _data_loc(detail["loc"])
        if detail["type"] == "missing" and (loc[:-1], loc[-1]) in suggested:
            continue
        line = locate(text, loc, first_line=first_line) if loc else None
        found.append(ContentError(path, _message(model, detail, loc), line=line))
    return sorted(found, key=lambda e: e.line or 0)


def _data_loc(loc: tuple[int | str, ...]) -> tuple[str | int, ...]:
    """The path into the YAML data, without pydantic's union-member tags."""
    return tuple(step for step in loc if step not in UNION_TAGS)


def _key_path(loc: Sequence[str | int]) -> str:
    return ".".join(str(s) for s in loc) if loc else "(top level)"


def _message(model: type[BaseModel], detail: ErrorDetails, loc: tuple[str | int, ...]) -> str:
    kind = detail["type"]
    seen = detail.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        known = _keys_at(model, loc[:-1])
        where = f" under '{_key_path(loc[:-1])}'" if len(loc) > 1 else ""
        if key == "contexts" and len(loc) > 1 and loc[-2] in ("default", "dm"):
            return (
                f"'contexts:' under '{_key_path(loc[:-1])}' is refused: a bot-default or DM "
                "rule is a template for many chats — bind contexts in a group rule under "
                "'chats:' instead"
            )
        return f"unknown key '{key}'{where}{did_you_mean(key, known)}"
    if kind == "missing":
        return f"missing key '{_key_path(loc)}' — add it to the frontmatter"
    if kind == "literal_error":
        words = _literal_words(model, loc)
        if loc and loc[0] == "when":
            return f"unknown when word '{seen}'{did_you_mean(str(seen), words)}"
        return f"'{_key_path(loc)}' cannot be '{seen}'{did_you_mean(str(seen), words)}"
    if kind == "value_error":
        return f"'{_key_path(loc)}': {detail['msg'].removeprefix('Value error, ')}"
    if kind == "string_pattern_mismatch":
        return (
            f"'{_key_path(loc)}' is '{seen}', which is not a valid name — use letters, "
            "digits, '_' and '-' (views and columns: letters, digits and '_')"
        )
    if kind == "model_type" and not loc:
        return "the frontmatter must be a mapping of keys to values"
    return f"'{_key_path(loc)}' {_lower_first(detail['msg'])} (got {_show(seen)})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
        else:
            # A dict key (e.g. a bot name): the value type is the dict's second argument.
            args = [a for a in _flatten(current) if typing.get_origin(a) is dict]
            if not args:
                return None
            current = typing.get_args(args[0])[1]
    return current


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
