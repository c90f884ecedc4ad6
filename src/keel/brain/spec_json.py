"""Specs as JSON values, and back, strictly: what the snapshot cache stores.

`plain(spec)` turns a spec (a frozen dataclass of `keel.brain.specs` or
`keel.brain.constitution`) into JSON values: a dataclass is an object of its fields, a
tuple or frozenset a list, a mapping a list of [key, value] pairs (keys may be tuples), a
duration [days, seconds, microseconds]. Fields whose name starts with `_` are indexes
built from the others (`Access`'s look-ups): they are not stored.

`reader(SpecType)` reads such values back, led by the type annotations alone: an object
must have exactly the dataclass's fields, each value exactly its declared type (JSON's
`true` is no int, `1` no float, NaN no number), a `Literal` one of its words. The first
value that is not raises `Unreadable`. Nothing read is ever evaluated or imported: the
values only fill the fields of the spec types named here.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from keel.brain.constitution import Access

Reader = Callable[[Any], Any]


class Unreadable(ValueError):
    """JSON values that are not the spec type they were read as."""


def plain(value: Any) -> Any:
    """A spec as JSON values (see the module's docstring)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, timedelta):
        return [value.days, value.seconds, value.microseconds]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name)) for name in _fields(type(value))}
    if isinstance(value, Mapping):
        return [[plain(k), plain(v)] for k, v in value.items()]
    if isinstance(value, frozenset):
        return sorted(plain(v) for v in value)
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    raise TypeError(f"a spec holds a {type(value).__name__}, which plain() cannot store")


_READERS: dict[Any, Reader] = {}


def reader(hint: Any) -> Reader:
    """A function reading JSON values as a value of type `hint` (built once per type)."""
    found = _READERS.get(hint)
    if found is None:
        found = _READERS[hint] = _build(hint)
    return found


def _fields(cls: type) -> dict[str, Any]:
    """A dataclass's stored fields and their types, in order."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if not f.name.startswith("_")}


def _build(hint: Any) -> Reader:
    if hint in (str, int, bool, float):
        return _scalar(hint)
    if hint is timedelta:
        return _duration
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))  # specs say `X | None` only
        read_inner = reader(inner)
        return lambda data: None if data is None else read_inner(data)
    if origin is Literal:
        return _literal(frozenset(args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = reader(args[0])
        return lambda data: tuple(item(x) for x in _list(data))
    if origin is tuple:
        return _fixed(tuple(reader(a) for a in args))
    if origin is frozenset:
        member = reader(args[0])
        return lambda data: frozenset(member(x) for x in _list(data))
    if origin is Mapping:
        return _mapping(reader(args[0]), reader(args[1]))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _object(hint)
    raise TypeError(f"reader() knows no type {hint!r}")


def _scalar(kind: type) -> Reader:
    def read(data: Any) -> Any:
        # `type(...) is`: JSON's true is no int, and its 1 no float.
        if type(data) is not kind or (isinstance(data, float) and not math.isfinite(data)):
            raise Unreadable(f"{data!r:.80} is not a {kind.__name__}")
        return data

    return read


def _duration(data: Any) -> timedelta:
    days, seconds, micro = reader(tuple[int, int, int])(data)
    try:
        return timedelta(days=days, seconds=seconds, microseconds=micro)
    except OverflowError:
        raise Unreadable(f"{data!r:.80} is not a duration") from None


def _literal(words: frozenset[Any]) -> Reader:
    def read(data: Any) -> Any:
        if not isinstance(data, str) or data not in words:
            raise Unreadable(f"{data!r:.80} is not one of {sorted(words)}")
        return data

    return read


def _list(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise Unreadable(f"{data!r:.80} is not a list")
    return data


def _fixed(items: tuple[Reader, ...]) -> Reader:
    def read(data: Any) -> tuple[Any, ...]:
        values = _list(data)
        if len(values) != len(items):
            raise Unreadable(f"{data!r:.80} does not have {len(items)} items")
        return tuple(item(value) for item, value in zip(items, values, strict=True))

    return read


def _mapping(key: Reader, value: Reader) -> Reader:
    pair = _fixed((key, value))

    def read(data: Any) -> Mapping[Any, Any]:
        pairs = [pair(item) for item in _list(data)]
        found = dict(pairs)
        if len(found) != len(pairs):
            raise Unreadable("a key appears twice")
        return types.MappingProxyType(found)

    return read


def _object(cls: type) -> Reader:
    fields = {name: reader(hint) for name, hint in _fields(cls).items()}

    def read(data: Any) -> Any:
        if not isinstance(data, dict) or data.keys() != fields.keys():
            raise Unreadable(f"not a {cls.__name__}: {data!r:.80}")
        values = {name: read_field(data[name]) for name, read_field in fields.items()}
        if cls is Access:  # its look-up indexes are built from its rules, never read
            made = Access.of(values["path"], values["rules"], values["failed"])
            return dataclasses.replace(made, broken=values["broken"])
        return cls(**values)

    return read
