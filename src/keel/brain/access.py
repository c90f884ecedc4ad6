"""Reading `constitution/access.yaml` one rule at a time, so a bad rule costs only itself.

Each bot's `default` and `dm` templates and each of its `chats:` entries is a rule, and
each is validated on its own: a rule that fails becomes a `FailedRule` (which bot, which
template or chat, its problems with their lines) and every other rule and pin still
holds. What cannot be tied to one rule fails the file as a whole (`Access.broken`): YAML
that does not parse, a top level other than `bots:`, a bot entry that is not a mapping or
holds a key other than `default`, `dm` and `chats`, a `chats:` that is not a mapping, or
a bot name or chat id that is neither text nor a number — for all of those no one can
tell which chats the broken part meant, so no chat may be answered.

A file that validates whole (the common case) is read in one pass, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import ValidationError

from keel.brain import schema
from keel.brain.constitution import TEMPLATES, Access, ChatRule, FailedRule
from keel.brain.document import Locator, decode, locate, parse_yaml
from keel.brain.limits import MAX_CHAT_ID_CHARS
from keel.brain.problems import did_you_mean, short, validation_errors
from keel.brain.reading import read_file
from keel.brain.specs import Skip
from keel.errors import ContentError

BOT_KEYS = ("default", "dm", "chats")
Scope = Literal["default", "dm", "chat"]
_TEMPLATE_SCOPES: tuple[Literal["default", "dm"], ...] = ("default", "dm")
Loc = tuple[str | int, ...]


class _Whole(Exception):
    """Problems that fail the whole file."""

    def __init__(self, problems: list[ContentError]) -> None:
        self.problems = problems


def parse_access(path: str, text: str) -> tuple[Access, list[ContentError]]:
    """The file's rules and failed rules, and every problem found (the brain's skips).

    Never raises for bad content: a file that fails as a whole is an `Access` whose
    `broken` says why, so that every turn is refused rather than served without rules.
    """
    try:
        data = parse_yaml(path, text)
        data = {} if data is None else data
        try:
            front = schema.AccessFile.model_validate(data)
        except ValidationError:
            return _rule_by_rule(path, text, data)
        return _whole_file(path, text, front)
    except ContentError as exc:
        return broken(path, [exc])
    except _Whole as exc:
        return broken(path, exc.problems)


def broken(path: str, problems: list[ContentError]) -> tuple[Access, list[ContentError]]:
    """An access.yaml that cannot be used at all, and why."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    reason = Skip(path=path, reason=first.reason + more, line=first.line)
    return Access.failed_whole(path, reason), problems


def _whole_file(
    path: str, text: str, front: schema.AccessFile
) -> tuple[Access, list[ContentError]]:
    """The rules of a file that validated whole; only a chat named like a template fails."""
    rules: list[ChatRule] = []
    failed: list[FailedRule] = []
    for bot, bot_rules in front.bots.items():
        for scope in TEMPLATES:
            template = getattr(bot_rules, scope)
            if template is not None:
                rules.append(
                    ChatRule(bot=bot, scope=scope, role=template.role, title=template.title)
                )
        for chat, group in bot_rules.chats.items():
            if chat in TEMPLATES:
                loc: Loc = ("bots", bot, "chats", chat)
                problem = ContentError(path, _collision(loc), line=Locator(text).line(loc))
                failed.append(_failed(bot, "chat", chat, [problem]))
            else:
                rules.append(_group(bot, chat, group))
    return _result(path, rules, failed)


def _result(
    path: str, rules: list[ChatRule], failed: list[FailedRule]
) -> tuple[Access, list[ContentError]]:
    problems = [ContentError(path, p.reason, line=p.line) for f in failed for p in f.problems]
    return Access.of(path, tuple(rules), tuple(failed)), problems


def _group(bot: str, chat: str, rule: schema.GroupRule) -> ChatRule:
    return ChatRule(
        bot=bot,
        scope=chat,
        role=rule.role,
        title=rule.title,
        contexts=MappingProxyType(dict(rule.contexts)),
    )


def _failed(bot: str, scope: Scope, chat: str | None, errors: list[ContentError]) -> FailedRule:
    return FailedRule(
        bot=bot,
        scope=scope,
        chat=chat,
        problems=tuple(Skip(path=e.path, reason=e.reason, line=e.line) for e in errors),
    )


def _collision(loc: Loc) -> str:
    bot, chat = short(loc[1]), short(loc[3])
    return (
        f"the chat id '{chat}' under 'bots.{bot}.chats' is the name of a template rule — "
        f"write bot '{bot}''s {chat} rule as `{chat}:` beside `chats:`, or use the chat's "
        "real id"
    )


# -- a file that did not validate whole: rule by rule ----------------------------------


def _rule_by_rule(path: str, text: str, data: Any) -> tuple[Access, list[ContentError]]:
    reader = _Rules(path, text)
    for bot_key, entry in _structure(reader, data).items():
        named = _bot_name_problems(reader, bot_key)
        for scope in _TEMPLATE_SCOPES:
            if entry.get(scope) is not None:  # `dm:` with no value sets no rule
                reader.read(bot_key, scope, None, entry[scope], named)
        for chat_key, value in (entry.get("chats") or {}).items():
            reader.read(bot_key, "chat", chat_key, value, named)
    return _result(path, reader.rules, reader.failed)


class _Rules:
    """The rules read so far from one file, and the failed ones."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.locator = Locator(text)
        self.rules: list[ChatRule] = []
        self.failed: list[FailedRule] = []

    def problem(self, loc: Loc, message: str) -> ContentError:
        return ContentError(self.path, message, line=self.locator.line(loc) if loc else 1)

    def read(
        self,
        bot_key: str | int,
        scope: Scope,
        chat_key: str | int | None,
        value: Any,
        named: list[ContentError],
    ) -> None:
        """Validate one rule alone; keep it, or record it as failed with every problem."""
        loc: Loc = (
            ("bots", bot_key, scope) if chat_key is None else ("bots", bot_key, "chats", chat_key)
        )
        chat = None if chat_key is None else str(chat_key)
        problems = [*named, *_chat_problems(self, loc, chat_key)]
        model = schema.TemplateRule if chat_key is None else schema.GroupRule
        rule: schema.TemplateRule | None = None
        if not isinstance(value, dict):
            problems.append(
                self.problem(
                    loc,
                    f"'{_dotted(loc)}' must be a mapping of keys to values, such as "
                    "{ role: concierge }",
                )
            )
        else:
            try:
                rule = model.model_validate(value)
            except ValidationError as exc:
                problems.extend(
                    validation_errors(
                        self.path,
                        model,
                        exc,
                        text=self.text,
                        first_line=1,
                        prefix=loc,
                        locator=self.locator,
                    )
                )
        bot = str(bot_key)
        if rule is None and not problems:  # never expected; a rule is kept only when read
            problems.append(self.problem(loc, "the rule could not be read"))
        if problems or rule is None:
            self.failed.append(_failed(bot, scope, chat, problems))
        elif isinstance(rule, schema.GroupRule) and chat is not None:
            self.rules.append(_group(bot, chat, rule))
        else:
            self.rules.append(ChatRule(bot=bot, scope=scope, role=rule.role, title=rule.title))


def _structure(reader: _Rules, data: Any) -> dict[str | int, dict[str, Any]]:
    """`bots:` as bot → entry; raises `_Whole` with every problem no one rule owns."""
    if not isinstance(data, dict):
        raise _Whole([reader.problem((), "access.yaml must be a mapping with `bots:` at its top")])
    problems = [
        reader.problem(
            (key,), f"unknown key '{short(key)}' at the top level{did_you_mean(str(key), ['bots'])}"
        )
        for key in data
        if key != "bots"
    ]
    bots = {} if data.get("bots") is None else data["bots"]
    if not isinstance(bots, dict):
        problems.append(
            reader.problem(("bots",), "'bots' must be a mapping of bot names to their rules")
        )
        raise _Whole(problems)
    for bot_key, entry in bots.items():
        problems.extend(_entry_problems(reader, bot_key, entry))
    if problems:
        raise _Whole(problems)
    return {key: entry or {} for key, entry in bots.items()}


def _entry_problems(reader: _Rules, bot_key: Any, entry: Any) -> Iterator[ContentError]:
    loc: Loc = ("bots", bot_key)
    if not _is_name(bot_key):
        yield reader.problem(
            ("bots",), f"the bot name {short(repr(bot_key))} is not text — quote it"
        )
        return
    if entry is None:
        return
    if not isinstance(entry, dict):
        yield reader.problem(loc, f"'{_dotted(loc)}' must be a mapping of default, dm and chats")
        return
    for key in entry:
        if key not in BOT_KEYS:
            yield reader.problem(
                (*loc, key),
                f"unknown key '{short(key)}' under '{_dotted(loc)}'"
                f"{did_you_mean(str(key), BOT_KEYS)}",
            )
    chats = entry.get("chats")
    if chats is not None and not isinstance(chats, dict):
        yield reader.problem(
            (*loc, "chats"), f"'{_dotted(loc)}.chats' must be a mapping of chat ids to rules"
        )
    elif chats:
        for chat_key in chats:
            if not _is_name(chat_key):
                yield reader.problem(
                    (*loc, "chats"), f"the chat id {short(repr(chat_key))} is not text — quote it"
                )


def _is_name(key: Any) -> bool:
    # A number is what the author wrote unquoted, so it names one chat or bot; a list,
    # a mapping, a date or a yes/no could name any.
    return isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool))


def _bot_name_problems(reader: _Rules, bot_key: str | int) -> list[ContentError]:
    if isinstance(bot_key, str) and re.match(schema.ID_PATTERN, bot_key) and len(bot_key) <= 128:
        return []
    return [
        reader.problem(
            ("bots", bot_key),
            f"the bot name '{short(bot_key)}' is not usable — use letters, digits, '_' and '-', "
            "in quotes if it starts with a digit",
        )
    ]


def _chat_problems(reader: _Rules, loc: Loc, chat_key: str | int | None) -> list[ContentError]:
    if chat_key is None:
        return []
    if isinstance(chat_key, int):
        message = f"the chat id {chat_key} is written as a number — chat ids are text; quote it"
    elif not chat_key:
        message = f"an empty chat id under '{_dotted(loc[:3])}' — write the chat's id"
    elif len(chat_key) > MAX_CHAT_ID_CHARS:
        message = (
            f"a chat id of {len(chat_key):,} characters, over the limit of "
            f"{MAX_CHAT_ID_CHARS} (docs/limits.md) — write the chat's id"
        )
    elif chat_key in TEMPLATES:
        message = _collision(loc)
    else:
        return []
    return [reader.problem(loc, message)]


def _dotted(loc: Loc) -> str:
    return short(".".join(str(step) for step in loc), 120)


# -- where a rule sits, for messages that point at it ----------------------------------


def rule_loc(rule: ChatRule) -> Loc:
    """Where the rule sits in access.yaml."""
    if rule.is_group:
        return ("bots", rule.bot, "chats", rule.scope)
    return ("bots", rule.bot, rule.scope)


def role_line(root: Path, path: str, rule: ChatRule) -> int | None:
    """The line of the rule's `role:` in access.yaml, or None when the file cannot be read
    now. The file is read again: only an error about the rule needs the line."""
    try:
        text = decode(path, read_file(str(root), path))
    except (OSError, ContentError):
        return None
    return locate(text, (*rule_loc(rule), "role"))
