"""Checking what brain code answered: pure functions from a call and its reply to an answer.

Brain code is trusted to mean well, never to be right, so every answer is checked here
before it can link, render or decide anything. A wrong shape is a `Failure` of that call
(kind `shape`) that names what came back and what to return instead, at the line of the
function that answered; it links nothing, renders nothing, decides nothing. The one
exception is an engage policy's attach list: a bad entry is dropped on its own, with its
reason, and the rest of the verdict stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from keel.brain.limits import MAX_ENTITY_CHARS, MAX_RENDER_SECTIONS
from keel.brain.problems import did_you_mean
from keel.brain.specs import ReachEntry
from keel.code.values import (
    EngageAnswer,
    EngageCall,
    Failure,
    GateAnswer,
    GateCall,
    MatchAnswer,
    MatchCall,
    RenderAnswer,
    RenderCall,
    Reply,
    Section,
)

MAX_KEY_CHARS = 64
SECTION_KEY = re.compile(r"[a-z][a-z0-9_]*")
_PLAIN = "plain data (dict, list, str, int, float, bool, None)"


class _Wrong(Exception):
    """A shape problem found while reading an answer; its message is the reason."""


def match_answer(call: MatchCall, reply: Reply) -> MatchAnswer:
    """Link (with or without an entity), no link, or a failure saying what to return."""
    effect = "it links nothing"
    try:
        failure = _early(call.path, "match", reply, effect)
        if failure is not None or reply.absent or reply.value is None:
            return MatchAnswer(context=call.context, failure=failure, log=reply.log)
        entity = _match_entity(call, reply.value)
    except _Wrong as wrong:
        failure = _shape(call.path, reply, f"{wrong}; until then {effect}")
        return MatchAnswer(context=call.context, failure=failure, log=reply.log)
    return MatchAnswer(context=call.context, linked=True, entity=entity, log=reply.log)


def render_answer(call: RenderCall, reply: Reply) -> RenderAnswer:
    """The sections a render returned, or a failure for the first thing wrong with them."""
    effect = "it renders nothing"
    try:
        failure = _early(call.path, "render", reply, effect)
        sections = () if failure is not None or reply.absent else _sections(call, reply.value)
    except _Wrong as wrong:
        failure = _shape(call.path, reply, f"{wrong}; until then {effect}")
        sections = ()
    return RenderAnswer(
        context=call.context,
        entity=call.entity,
        sections=sections,
        failure=failure,
        log=reply.log,
    )


def engage_answer(call: EngageCall, reply: Reply) -> EngageAnswer:
    """A verdict and its good attach entries; each bad entry is dropped with its reason."""
    effect = "the chat rules decide alone and nothing is attached"
    try:
        failure = _early(call.path, "engage", reply, effect)
        if failure is not None or reply.absent or reply.value is None:
            return EngageAnswer(failure=failure, log=reply.log)
        value = reply.value
        if not isinstance(value, dict):
            raise _Wrong(
                f"engage returned {described(value)} — return "
                "{'engage': True or False, 'attach': [{'context': ..., 'entity': ...}]} or None"
            )
        _only_keys("engage", value, ("engage", "attach"))
        verdict = value.get("engage")
        if not isinstance(verdict, bool):
            raise _Wrong(
                f"engage returned 'engage': {described(verdict)} — it must be True or False"
            )
    except _Wrong as wrong:
        failure = _shape(call.path, reply, f"{wrong}; until then {effect}")
        return EngageAnswer(failure=failure, log=reply.log)
    attach, dropped = _attach(call, value.get("attach", []))
    return EngageAnswer(engage=verdict, attach=attach, dropped=dropped, log=reply.log)


def gate_answer(call: GateCall, reply: Reply) -> GateAnswer:
    """A reach replacing the hook's, an entity keying it, both, or neither ({} or None)."""
    effect = "every fire of the hook fails"
    try:
        failure = _early(call.path, "the gate", reply, effect)
        if failure is not None:
            return GateAnswer(failure=failure, log=reply.log)
        value = reply.value
        if value is None:
            return GateAnswer(log=reply.log)
        if not isinstance(value, dict):
            raise _Wrong(
                f"the gate returned {described(value)} — return {{'reach': [{{'context': ...}}]}}"
                ", {'entity': key}, or None for the hook's own reach"
            )
        _only_keys("the gate", value, ("reach", "entity"))
        reach = None if "reach" not in value else _reach(value["reach"])
        entity = None if "entity" not in value else _entity("the gate", value["entity"])
    except _Wrong as wrong:
        failure = _shape(call.path, reply, f"{wrong}; until then {effect}")
        return GateAnswer(failure=failure, line=reply.line, log=reply.log)
    return GateAnswer(reach=reach, entity=entity, line=reply.line, log=reply.log)


def merged_attach(answers: Iterable[EngageAnswer]) -> tuple[ReachEntry, ...]:
    """Every attach entry of several merged messages, each (context, entity) once, in order."""
    seen: dict[tuple[str, str | None], ReachEntry] = {}
    for answer in answers:
        for entry in answer.attach:
            seen.setdefault((entry.context, entry.entity), entry)
    return tuple(seen.values())


def described(value: Any) -> str:
    """A value as a message names it: its type, and a short look at it."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"a bool ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a str ({shown!r})"
    if isinstance(value, int | float):
        return f"{'an int' if isinstance(value, int) else 'a float'} ({value})"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        if not value:
            return "an empty dict"
        return "a dict with " + ", ".join(repr(k) for k in list(value)[:5])
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------------------------


def _early(path: str, what: str, reply: Reply, effect: str) -> Failure | None:
    """The worker's own failure, or one for a value that is not plain data."""
    if reply.failure is not None:
        return reply.failure
    if reply.unplain is not None:
        reason = (
            f"{what} returned {reply.unplain}, which is not {_PLAIN} — return plain values; "
            f"until then {effect}"
        )
        return _shape(path, reply, reason)
    return None


def _shape(path: str, reply: Reply, reason: str) -> Failure:
    return Failure(file=path, kind="shape", reason=reason, line=reply.line)


def _match_entity(call: MatchCall, value: Any) -> str | None:
    if not isinstance(value, dict):
        raise _Wrong(
            f"match returned {described(value)} — return {{'entity': key}} to link with a key, "
            "{} to link without one, or None to link nothing"
        )
    _only_keys("match", value, ("entity",))
    if value.get("entity") is None:
        return None
    entity = _entity("match", value["entity"])
    if not call.keyed:
        raise _Wrong(
            f"match returned the entity {entity!r}, but context '{call.context}' names no "
            "entity (its .context.md has no entity:) — return {} to link it, or declare "
            "entity: in the context"
        )
    return entity


def _entity(who: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _Wrong(f"{who} returned the entity {described(value)} — an entity key is a string")
    if not 0 < len(value) <= MAX_ENTITY_CHARS:
        raise _Wrong(
            f"{who} returned an entity key of {len(value)} characters — a key is 1 to "
            f"{MAX_ENTITY_CHARS} characters"
        )
    return value


def _only_keys(who: str, value: Mapping[str, Any], allowed: Sequence[str]) -> None:
    extra = [k for k in value if k not in allowed]
    if extra:
        keys = ", ".join(repr(k) for k in allowed)
        raise _Wrong(
            f"{who} returned the key {extra[0]!r}{did_you_mean(str(extra[0]), allowed)} "
            f"(it may return {keys})"
        )


def _sections(call: RenderCall, value: Any) -> tuple[Section, ...]:
    if not isinstance(value, list):
        raise _Wrong(
            f"render returned {described(value)} — return a list of sections, "
            "[{'key': 'name', 'text': '...'}] ([] for none)"
        )
    if len(value) > MAX_RENDER_SECTIONS:
        raise _Wrong(
            f"render returned {len(value):,} sections, more than the limit of "
            f"{MAX_RENDER_SECTIONS} (docs/limits.md) — return fewer: join small ones into one "
            "section's text"
        )
    sections: list[Section] = []
    keys: set[str] = set()
    # Counted from 1, as a person counts the items of a list.
    for index, item in enumerate(value, start=1):
        if not isinstance(item, dict) or set(item) != {"key", "text"}:
            raise _Wrong(
                f"render's section {index} is {described(item)} — each section is "
                "{'key': 'name', 'text': '...'} and nothing else"
            )
        key, text = item["key"], item["text"]
        _key(call, key, keys)
        if not isinstance(text, str):
            raise _Wrong(f"render's section {key!r} has text {described(text)} — text is a str")
        keys.add(key)
        sections.append(Section(key=key, text=text))
    return tuple(sections)


def _key(call: RenderCall, key: Any, before: set[str]) -> None:
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS:
        size = f"of {len(key)} characters" if isinstance(key, str) else described(key)
        raise _Wrong(
            f"render returned a section key {size} — a key is a lowercase identifier of 1 to "
            f"{MAX_KEY_CHARS} characters"
        )
    if not SECTION_KEY.fullmatch(key):
        raise _Wrong(
            f"render returned the section key {key!r} — a key is a lowercase identifier "
            "(a-z, 0-9 and _, starting with a letter)"
        )
    if key == "instructions":
        raise _Wrong(
            "render returned the section key 'instructions', which is the context's own "
            "instructions — name the section otherwise"
        )
    if key in call.views:
        raise _Wrong(
            f"render returned the section key {key!r}, which is one of the context's views — "
            "name the section otherwise"
        )
    if key in before:
        raise _Wrong(f"render returned the section key {key!r} twice — each key once")


def _attach(call: EngageCall, value: Any) -> tuple[tuple[ReachEntry, ...], tuple[str, ...]]:
    if not isinstance(value, list):
        why = f"'attach' is {described(value)}, not a list of {{'context', 'entity'?}} entries"
        return (), (f"{call.path}: {why} — nothing attached",)
    kept: list[ReachEntry] = []
    dropped: list[str] = []
    for index, item in enumerate(value, start=1):
        try:
            kept.append(_attach_entry(call, item))
        except _Wrong as wrong:
            dropped.append(f"{call.path}: attach entry {index} dropped: {wrong}")
    return tuple(kept), tuple(dropped)


def _attach_entry(call: EngageCall, item: Any) -> ReachEntry:
    entry = _reach_entry(item)
    if entry.context not in call.contexts:
        raise _Wrong(
            f"no context {entry.context!r} in this brain"
            f"{did_you_mean(entry.context, call.contexts)}"
        )
    if entry.entity is not None and not call.contexts[entry.context]:
        raise _Wrong(
            f"context {entry.context!r} names no entity, so it takes no key ({entry.entity!r})"
            " — leave 'entity' out"
        )
    return entry


def _reach(value: Any) -> tuple[ReachEntry, ...]:
    if not isinstance(value, list):
        raise _Wrong(
            f"the gate returned 'reach': {described(value)} — it is a list of "
            "{'context': id, 'entity': key} entries ([] reaches none)"
        )
    entries: list[ReachEntry] = []
    for index, item in enumerate(value, start=1):
        try:
            entries.append(_reach_entry(item))
        except _Wrong as wrong:
            raise _Wrong(f"the gate's reach entry {index}: {wrong}") from None
    return tuple(entries)


def _reach_entry(item: Any) -> ReachEntry:
    if not isinstance(item, dict):
        raise _Wrong(f"{described(item)} is not {{'context': id, 'entity': key}}")
    _only_keys("the entry", item, ("context", "entity"))
    context = item.get("context")
    if context is None or context == "":
        raise _Wrong("an entry without a context id — name one: {'context': id, 'entity': key}")
    if not isinstance(context, str):
        raise _Wrong(f"'context' is {described(context)} — a context id is a string")
    entity = item.get("entity")
    if entity is not None:
        entity = _entity("the entry", entity)
    return ReachEntry(context=context, entity=entity)
