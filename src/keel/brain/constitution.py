"""The brain's constitution: `MANIFEST.yaml` settings and `access.yaml` chat rules.

How access.yaml is read, one rule at a time, is `keel.brain.access`; the values it
yields, and the answer to "may this bot take a turn in this chat", are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Literal

from keel.brain.specs import ApprovalPolicy, ContextsBudget, ModelSpec, People, Skip

DEFAULT_CHARS = 3000
DEFAULT_MAX_ACTIVE = 3
DEFAULT_TURN_CHARS = 12000
DEFAULT_KEEP = 3
DEFAULT_CODE_TIMEOUT_MS = 2000
DEFAULT_STATE_ROWS = 20
# How long one view's read may take before it shows as a stub (see keel.state.views).
DEFAULT_STATE_READ_TIMEOUT_MS = 2000
DEFAULT_RETENTION_DAYS = 365
DEFAULT_CONTENT_PROBE_SECONDS = 2.0
# How long an approval card waits for a person before it counts as denied.
DEFAULT_APPROVAL_TIMEOUT = timedelta(days=2)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tenancy:
    """MANIFEST `tenancy:`: the context whose binding is a room's tenant, and the column
    that marks a tenant's rows in any view."""

    context: str
    column: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeAccess:
    """MANIFEST `code:`: what brain code's worker processes are given beyond the minimum.

    `env` names the environment variables passed on from Keel's own environment (never one
    of Keel's own, `KEEL_*`); `network` False refuses them IPv4 and IPv6 sockets where the
    platform allows (`keel.code.boundary`).
    """

    env: tuple[str, ...] = ()
    network: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """`constitution/MANIFEST.yaml`; every key has a default, so a brain may omit the file."""

    path: str | None = None
    name: str | None = None
    contexts: ContextsBudget = field(default_factory=ContextsBudget)
    state_rows: int = DEFAULT_STATE_ROWS
    state_read_timeout_ms: int = DEFAULT_STATE_READ_TIMEOUT_MS
    retention_days: int = DEFAULT_RETENTION_DAYS
    content_probe_seconds: float = DEFAULT_CONTENT_PROBE_SECONDS
    model: ModelSpec = field(default_factory=ModelSpec)
    sections: tuple[tuple[str, int], ...] = ()
    tenancy: Tenancy | None = None
    code: CodeAccess = field(default_factory=CodeAccess)
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    # None: no `people:` — anyone who can reply to a card decides it (doctor warns).
    people: People | None = None
    # Why the file did not load. Its other settings are then the defaults, but the three that
    # guard people's data are never loosened by a broken file (`keel.brain.files._broken_manifest`).
    broken: Skip | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRule:
    """A rule of one bot for chats: a template (default, DM) or one group's rule.

    Only a group rule may bind contexts; `contexts` maps a context id to its entity key,
    or to `None` for a context bound without one (which pins a keyed context to none).
    """

    bot: str
    scope: str  # "default", "dm" or the chat id of a group rule
    role: str | None = None
    title: str | None = None
    contexts: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def is_group(self) -> bool:
        return self.scope not in TEMPLATES


TEMPLATES = ("default", "dm")


def _cut(text: str, width: int = 80) -> str:
    # A failed rule's bot or chat may be any text, of any length.
    return text if len(text) <= width else f"{text[: width - 3]}..."


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedRule:
    """A rule of access.yaml that did not load: the turns it would have governed are refused.

    `scope` is "default" or "dm" for a template, else `chat` names the group the rule
    was for (a failed group rule refuses that chat for every bot, since a group rule
    pins the room for all of them).
    """

    bot: str
    scope: Literal["default", "dm", "chat"]
    chat: str | None
    # Every problem found in the rule, in file order; never empty.
    problems: tuple[Skip, ...]

    @property
    def line(self) -> int | None:
        """The line of the rule's first problem."""
        return self.problems[0].line

    @property
    def reason(self) -> str:
        """The rule's first problem, and how many more it has."""
        more = len(self.problems) - 1
        return self.problems[0].reason + (f" (and {more} more problems)" if more else "")

    @property
    def subject(self) -> str:
        """The rule in words: `bot 'nova' chat 'tg:chat:-1'`, `bot 'nova' DM rule`."""
        bot = _cut(self.bot)
        if self.scope == "chat":
            return f"bot '{bot}' chat '{_cut(self.chat or '')}'"
        return f"bot '{bot}' {'DM' if self.scope == 'dm' else 'default'} rule"


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """What access.yaml says of one bot in one chat (`Access.room`)."""

    refusal: str | None  # why this bot may take no turn here (`Access.refusal`)
    closed: str | None  # why no bot may (`Access.room_refusal`)
    rule: ChatRule | None  # the rule that governs this bot here (`Access.rule_for`)
    group_rules: tuple[ChatRule, ...]  # every bot's group rule for the chat


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """`constitution/access.yaml`: every bot's chat rules, and the rules that failed.

    Access fails closed. `refusal` answers, for a turn's bot and chat, why no turn may run
    there: the whole file failed (`broken`), the chat's group rule failed (for any bot),
    or the template that would govern the turn failed. A failed `dm` rule does not fall
    back to `default`, and a failed `default` does not fall back to "no rule".
    """

    path: str | None = None
    rules: tuple[ChatRule, ...] = ()
    failed: tuple[FailedRule, ...] = ()
    # The whole file failed: every turn of every bot is refused with this reason.
    broken: Skip | None = None
    # Indexes over `rules` and `failed`, so a turn's look-ups do not walk every rule.
    _groups: Mapping[tuple[str, str], ChatRule] = field(default_factory=dict, repr=False)
    _templates: Mapping[tuple[str, str], ChatRule] = field(default_factory=dict, repr=False)
    _by_chat: Mapping[str, tuple[ChatRule, ...]] = field(default_factory=dict, repr=False)
    _failed_chats: Mapping[str, FailedRule] = field(default_factory=dict, repr=False)
    _failed_templates: Mapping[tuple[str, str], FailedRule] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def of(
        cls, path: str | None, rules: tuple[ChatRule, ...], failed: tuple[FailedRule, ...] = ()
    ) -> Access:
        by_chat: dict[str, list[ChatRule]] = {}
        groups: dict[tuple[str, str], ChatRule] = {}
        templates: dict[tuple[str, str], ChatRule] = {}
        for rule in rules:
            if rule.is_group:
                by_chat.setdefault(rule.scope, []).append(rule)
                groups[(rule.bot, rule.scope)] = rule
            else:
                templates[(rule.bot, rule.scope)] = rule
        failed_chats: dict[str, FailedRule] = {}
        failed_templates: dict[tuple[str, str], FailedRule] = {}
        for failure in failed:
            if failure.chat is not None:
                failed_chats.setdefault(failure.chat, failure)
            elif failure.scope != "chat":
                failed_templates.setdefault((failure.bot, failure.scope), failure)
        return cls(
            path=path,
            rules=rules,
            failed=failed,
            _groups=MappingProxyType(groups),
            _templates=MappingProxyType(templates),
            _by_chat=MappingProxyType({k: tuple(v) for k, v in by_chat.items()}),
            _failed_chats=MappingProxyType(failed_chats),
            _failed_templates=MappingProxyType(failed_templates),
        )

    @classmethod
    def failed_whole(cls, path: str, reason: Skip) -> Access:
        """The file could not be used at all: every turn is refused, with `reason`."""
        return cls(path=path, broken=reason)

    @property
    def bots(self) -> tuple[str, ...]:
        """The bots a rule that loaded is for, by name."""
        return tuple(sorted({rule.bot for rule in self.rules}))

    @property
    def named_bots(self) -> frozenset[str]:
        """Every bot the file names, in a rule that loaded or in one that failed."""
        return frozenset(self.bots) | {failure.bot for failure in self.failed}

    def room(self, bot: str, chat: str, *, dm: bool = False) -> Room:
        """Everything access.yaml says of `bot` in `chat`, in one look-up: a turn's
        stages read this value instead of asking again."""
        return Room(
            refusal=self.refusal(bot, chat, dm=dm),
            closed=self.room_refusal(chat),
            rule=self.rule_for(bot, chat, dm=dm),
            group_rules=self.group_rules(chat),
        )

    def group_rules(self, chat: str) -> tuple[ChatRule, ...]:
        """Every bot's group rule for this chat (a binding there pins the chat for all bots)."""
        return self._by_chat.get(chat, ())

    def rule_for(self, bot: str, chat: str, *, dm: bool = False) -> ChatRule | None:
        """The rule that applies to `bot` in `chat`: the group's, else DM, else the default."""
        group = self._groups.get((bot, chat))
        if group is not None:
            return group
        for scope in ("dm", "default") if dm else ("default",):
            template = self._templates.get((bot, scope))
            if template is not None:
                return template
        return None

    def room_refusal(self, chat: str) -> str | None:
        """Why no bot may take a turn in `chat`: the file, or a group rule for it, failed."""
        if self.broken is not None:
            return (
                f"{self.broken}; access rules fail closed, so no bot answers anywhere until "
                "the file is fixed (keel doctor shows it)"
            )
        failure = self._failed_chats.get(chat)
        if failure is None:
            return None
        return (
            f"{self._where(failure)}: the rule of {failure.subject} did not load "
            f"({failure.reason}); access rules fail closed, so no bot answers in this chat "
            "until the rule is fixed (keel doctor shows it)"
        )

    def refusal(self, bot: str, chat: str, *, dm: bool = False) -> str | None:
        """Why `bot` may take no turn in `chat`, whatever role or run it names; else None."""
        refusal = self.room_refusal(chat)
        if refusal is not None or (bot, chat) in self._groups:
            return refusal
        for scope in ("dm", "default") if dm else ("default",):
            failure = self._failed_templates.get((bot, scope))
            if failure is not None:
                return (
                    f"{self._where(failure)}: the {failure.subject} did not load "
                    f"({failure.reason}); access rules fail closed, so this bot answers no "
                    f"chat that rule governs until it is fixed (keel doctor shows it)"
                )
            if (bot, scope) in self._templates:
                return None
        return None

    def _where(self, failure: FailedRule) -> str:
        path = self.path or "constitution/access.yaml"
        return f"{path}:{failure.line}" if failure.line is not None else path
