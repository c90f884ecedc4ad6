"""The brain's constitution: `MANIFEST.yaml` settings and `access.yaml` chat rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from keel.brain.specs import ContextsBudget, ModelSpec

DEFAULT_CHARS = 3000
DEFAULT_MAX_ACTIVE = 3
DEFAULT_TURN_CHARS = 12000
DEFAULT_KEEP = 3
DEFAULT_CODE_TIMEOUT_MS = 2000
DEFAULT_STATE_ROWS = 20
DEFAULT_RETENTION_DAYS = 365
DEFAULT_CONTENT_PROBE_SECONDS = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """`constitution/MANIFEST.yaml`; every key has a default, so a brain may omit the file."""

    path: str | None = None
    name: str | None = None
    contexts: ContextsBudget = field(default_factory=ContextsBudget)
    state_rows: int = DEFAULT_STATE_ROWS
    retention_days: int = DEFAULT_RETENTION_DAYS
    content_probe_seconds: float = DEFAULT_CONTENT_PROBE_SECONDS
    model: ModelSpec = field(default_factory=ModelSpec)
    sections: tuple[tuple[str, int], ...] = ()


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
        return self.scope not in ("default", "dm")


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """`constitution/access.yaml`: every bot's chat rules."""

    path: str | None = None
    rules: tuple[ChatRule, ...] = ()
    # Indexes over `rules`, so a turn's look-ups do not walk every rule of every bot.
    _by_scope: Mapping[str, tuple[ChatRule, ...]] = field(default_factory=dict, repr=False)
    _by_bot_scope: Mapping[tuple[str, str], ChatRule] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, path: str | None, rules: tuple[ChatRule, ...]) -> Access:
        by_scope: dict[str, list[ChatRule]] = {}
        for rule in rules:
            by_scope.setdefault(rule.scope, []).append(rule)
        return cls(
            path=path,
            rules=rules,
            _by_scope=MappingProxyType({k: tuple(v) for k, v in by_scope.items()}),
            _by_bot_scope=MappingProxyType({(r.bot, r.scope): r for r in rules}),
        )

    def group_rules(self, chat: str) -> tuple[ChatRule, ...]:
        """Every bot's group rule for this chat (a binding there pins the chat for all bots)."""
        if chat in ("default", "dm"):
            return ()
        return self._by_scope.get(chat, ())

    def rule_for(self, bot: str, chat: str, *, dm: bool = False) -> ChatRule | None:
        """The rule that applies to `bot` in `chat`: the group's, else DM, else the default."""
        for scope in (chat, "dm" if dm else None, "default"):
            if scope is not None and (bot, scope) in self._by_bot_scope:
                return self._by_bot_scope[(bot, scope)]
        return None
