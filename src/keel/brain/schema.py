"""The strict shapes of brain files, checked at the boundary with pydantic.

Every model forbids unknown keys, so a misspelt key fails the file's load (with a
did-you-mean, see `keel.brain.problems`) rather than leaving a spec that quietly does less
than its author wrote. Every number has both ends bounded (`keel.brain.limits`), and a
yes/no value is never taken for a number: a value that passes here is one every later
stage can use (a row limit SQLite can bind, a retention a timedelta can hold).
"""

from __future__ import annotations

import difflib
import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from keel.brain import limits
from keel.brain.schedule import cron_problem
from keel.brain.specs import RISK_CLASSES, Decision, WhenWord, is_person

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
Ident = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=128)]
# SQL identifiers of views and columns; always quoted when used, but kept plain here.
SqlName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=63)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
Text = Annotated[str, StringConstraints(min_length=1)]
EntityKey = Annotated[str, StringConstraints(min_length=1, max_length=limits.MAX_ENTITY_CHARS)]
ChatId = Annotated[str, StringConstraints(min_length=1, max_length=limits.MAX_CHAT_ID_CHARS)]
SectionId = Annotated[str, StringConstraints(min_length=1, max_length=limits.MAX_SECTION_ID_CHARS)]


def _not_yes_no(value: Any) -> Any:
    # YAML reads `true` as a bool, and a bool is an int to Python: `chars: true` would be 1.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a yes/no value, not a number — write a number")
    return value


_NUMBER = BeforeValidator(_not_yes_no)
Chars = Annotated[int, _NUMBER, Field(ge=limits.CHARS.low, le=limits.CHARS.high)]
MaxActive = Annotated[int, _NUMBER, Field(ge=limits.MAX_ACTIVE.low, le=limits.MAX_ACTIVE.high)]
TurnChars = Annotated[int, _NUMBER, Field(ge=limits.TURN_CHARS.low, le=limits.TURN_CHARS.high)]
Keep = Annotated[int, _NUMBER, Field(ge=limits.KEEP.low, le=limits.KEEP.high)]
CodeTimeoutMs = Annotated[
    int, _NUMBER, Field(ge=limits.CODE_TIMEOUT_MS.low, le=limits.CODE_TIMEOUT_MS.high)
]
StateRows = Annotated[int, _NUMBER, Field(ge=limits.STATE_ROWS.low, le=limits.STATE_ROWS.high)]
ReadTimeoutMs = Annotated[
    int, _NUMBER, Field(ge=limits.STATE_READ_TIMEOUT_MS.low, le=limits.STATE_READ_TIMEOUT_MS.high)
]
RetentionDays = Annotated[
    int, _NUMBER, Field(ge=limits.RETENTION_DAYS.low, le=limits.RETENTION_DAYS.high)
]
ProbeSeconds = Annotated[
    float,
    _NUMBER,
    Field(
        ge=limits.CONTENT_PROBE_SECONDS.low,
        le=limits.CONTENT_PROBE_SECONDS.high,
        allow_inf_nan=False,
    ),
]
Window = Annotated[int, _NUMBER, Field(ge=limits.MODEL_WINDOW.low, le=limits.MODEL_WINDOW.high)]
OutputReserve = Annotated[
    int, _NUMBER, Field(ge=limits.OUTPUT_RESERVE.low, le=limits.OUTPUT_RESERVE.high)
]
InputAllocation = Annotated[
    int, _NUMBER, Field(ge=limits.INPUT_ALLOCATION.low, le=limits.INPUT_ALLOCATION.high)
]
SectionBudget = Annotated[
    int, _NUMBER, Field(ge=limits.SECTION_BUDGET.low, le=limits.SECTION_BUDGET.high)
]
ContextName = Annotated[str, StringConstraints(pattern=r"^(\*|[A-Za-z0-9][A-Za-z0-9_-]*)$")]


def _id_text(value: Any) -> Any:
    # YAML reads `thread: 42` (a forum topic) as a number; an id is text all the same.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _printable(value: str) -> str:
    # A run names its room with these, and a room's ids are printable text (no control
    # character reaches either database).
    if not value.isprintable():
        raise ValueError(f"{value!r} holds a control character — ids are printable text")
    return value


RoomId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=limits.MAX_CHAT_ID_CHARS),
    BeforeValidator(_id_text),
    AfterValidator(_printable),
]

# A duration: whole numbers with a unit each, `2d`, `30m`, `1h30m` (s, m, h, d, w).
_DURATION = re.compile(r"^(?:\d{1,9}[smhdw])+$")
_PART = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def _duration(value: Any) -> timedelta:
    text = value.replace(" ", "") if isinstance(value, str) else None
    if text is None or not _DURATION.match(text):
        raise ValueError(
            f"{value!r} is not a duration — write a number and a unit: 30m, 12h, 2d (s, m, "
            "h, d or w; 1h30m also works)"
        )
    seconds = sum(int(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))
    bound = limits.APPROVAL_TIMEOUT_SECONDS
    if not bound.low <= seconds <= bound.high:
        raise ValueError(
            f"{value!r} is {seconds:,} seconds; a timeout is {bound.low} second to 366 days "
            "(docs/limits.md) — use a duration in that range"
        )
    return timedelta(seconds=seconds)


Duration = Annotated[timedelta, BeforeValidator(_duration)]
CAPABILITY = re.compile(r"^[A-Za-z0-9_.-]+:[A-Za-z0-9_.*-]+$")
_APPROVAL_WORDS = (*RISK_CLASSES, "timeout", "chat")


def _approval_key(key: str) -> str:
    if CAPABILITY.match(key):
        return key
    near = difflib.get_close_matches(key[:100], _APPROVAL_WORDS, n=1, cutoff=0.6)
    hint = f"did you mean '{near[0]}'? The" if near else "the"
    raise ValueError(
        f"'{key[:60]}' is neither a risk class nor a capability — {hint} keys are safe, "
        "moderate, dangerous, a capability such as context:bind, timeout and chat"
    )


ApprovalKey = Annotated[str, AfterValidator(_approval_key)]


def _person(value: str) -> str:
    # `owners` stands for the owners' list wherever an approver may be named.
    if is_person(value):
        return value
    raise ValueError(
        f"{value[:60]!r} is not a person's id — write it as the chat surface names them, "
        "such as tg:user:42 (or `owners` in an approvers list)"
    )


def _approver_key(key: str) -> str:
    if key == "*" or key in RISK_CLASSES or CAPABILITY.match(key):
        return key
    raise ValueError(
        f"'{key[:60]}' is not something to approve — approvers are keyed by a capability "
        "such as message:send, a risk class (safe, moderate, dangerous) or '*' for the rest"
    )


Person = Annotated[
    str,
    StringConstraints(min_length=1, max_length=limits.MAX_CHAT_ID_CHARS),
    AfterValidator(_person),
]
ApproverEntry = Annotated[
    str,
    StringConstraints(min_length=1, max_length=limits.MAX_CHAT_ID_CHARS),
    AfterValidator(lambda v: v if v == "owners" else _person(v)),
]
ApproverKey = Annotated[str, AfterValidator(_approver_key)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, defer_build=True)


class ViewEntry(Strict):
    view: SqlName
    by: SqlName | None = None

    @field_validator("view")
    @classmethod
    def _not_instructions(cls, value: str) -> str:
        if value == "instructions":
            raise ValueError(
                "a view may not be named 'instructions': that is the key of the context's "
                "own body — rename the view"
            )
        return value


class ReachItem(Strict):
    context: Ident
    entity: EntityKey | None = None


# A list item is either a plain name or a mapping. Choosing the branch by the item's shape
# makes pydantic report the problems of that branch only, not of both.
NAME_TAG, ENTRY_TAG, LIST_TAG = "as-name", "as-mapping", "as-list"
UNION_TAGS = frozenset({NAME_TAG, ENTRY_TAG, LIST_TAG})


def _shape(value: Any) -> str:
    return ENTRY_TAG if isinstance(value, dict) else NAME_TAG


ReachValue = list[
    Annotated[
        Annotated[Ident, Tag(NAME_TAG)] | Annotated[ReachItem, Tag(ENTRY_TAG)],
        Discriminator(_shape),
    ]
]
DataValue = list[
    Annotated[
        Annotated[SqlName, Tag(NAME_TAG)] | Annotated[ViewEntry, Tag(ENTRY_TAG)],
        Discriminator(_shape),
    ]
]


# A widget's line: one column's name, or a list of them.
LineValue = Annotated[
    Annotated[SqlName, Tag(NAME_TAG)]
    | Annotated[list[SqlName], Field(min_length=1, max_length=8), Tag(LIST_TAG)],
    Discriminator(lambda v: LIST_TAG if isinstance(v, list) else NAME_TAG),
]


class WidgetFront(Strict):
    view: SqlName
    line: LineValue
    title: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = None


class ContextFront(Strict):
    description: Text | None = None
    entity: Text | None = None
    when: list[WhenWord]
    data: DataValue = []
    chars: Chars | None = None
    keep: Keep | None = None
    codeTimeoutMs: CodeTimeoutMs | None = None  # noqa: N815 - the file's own spelling
    # After `entity` and `data`, which its check reads.
    widget: WidgetFront | None = None

    @field_validator("widget")
    @classmethod
    def _widget_shows_a_whole_view(
        cls, value: WidgetFront | None, info: ValidationInfo
    ) -> WidgetFront | None:
        if value is None:
            return None
        if info.data.get("entity") is not None:
            raise ValueError(
                "a widget shows one list for every chat, and this context is keyed by an "
                "entity — remove 'widget:', or give the list a context of its own with no "
                "'entity:'"
            )
        whole = [
            d if isinstance(d, str) else d.view
            for d in info.data.get("data", [])
            if isinstance(d, str) or d.by is None
        ]
        if value.view not in whole:
            listed = ", ".join(whole) or "none"
            # `at`: the message names, and points at, the widget's `view:` line.
            raise PydanticCustomError(
                "value_error",
                f"'{value.view}' is not one of this context's whole 'data:' views ({listed}) "
                "— add it to 'data:', or name one listed there",
                {"at": "view"},
            )
        return value

    @field_validator("when")
    @classmethod
    def _when_not_empty(cls, value: list[WhenWord]) -> list[WhenWord]:
        if not value:
            raise ValueError(
                "'when: []' is refused: a context always attaches on some link — to switch "
                "it off, set 'enabled: false' in its FEATURE.md, or delete the file"
            )
        return value

    @field_validator("data", mode="before")
    @classmethod
    def _no_instructions_view(cls, value: Any) -> Any:
        if isinstance(value, list) and "instructions" in value:
            raise ValueError(
                "a view may not be named 'instructions': that is the key of the context's "
                "own body — rename the view"
            )
        return value


class BudgetFront(Strict):
    chars: Chars | None = None
    maxActive: MaxActive | None = None  # noqa: N815 - the file's own spelling
    turnChars: TurnChars | None = None  # noqa: N815
    keep: Keep | None = None
    codeTimeoutMs: CodeTimeoutMs | None = None  # noqa: N815


class ModelFront(Strict):
    name: Text | None = None
    window: Window | None = None
    output_reserve: OutputReserve | None = None
    input_allocation: InputAllocation | None = None

    @model_validator(mode="after")
    def _fits_the_window(self) -> ModelFront:
        # Only what one file sets can be checked here; the tiers meet in keel.brain.knobs.
        if self.window is None:
            return self
        reserve = self.output_reserve or 0
        if reserve >= self.window:
            raise ValueError(
                f"output_reserve {reserve:,} leaves nothing of window {self.window:,} for "
                "the input — make the reserve smaller than the window"
            )
        if self.input_allocation is not None and self.input_allocation > self.window - reserve:
            raise ValueError(
                f"input_allocation {self.input_allocation:,} is more than window "
                f"{self.window:,} minus output_reserve {reserve:,} — lower it to at most "
                f"{self.window - reserve:,}"
            )
        return self


class ApprovalsFront(Strict):
    """`approvals:` — risk classes and `timeout` by name; any other key is a capability."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=False, defer_build=True)
    # Keys pydantic knows nothing of are capabilities, each with its decision.
    __pydantic_extra__: dict[ApprovalKey, Decision] = Field(init=False)

    safe: Decision | None = None
    moderate: Decision | None = None
    dangerous: Decision | None = None
    timeout: Duration | None = None
    # Where cards are posted: an operators' chat id, or `here` (the room the run speaks in).
    chat: ChatId | None = None


class PeopleFront(Strict):
    """`people:` — the brain's owners, and who may decide which capability's cards."""

    owners: list[Person] | None = None
    approvers: dict[ApproverKey, list[ApproverEntry]] = {}


class RoleFront(Strict):
    description: Text | None = None
    contexts: list[ContextName] | None = None
    capabilities: list[Text] = []
    skills: list[Ident] = []
    state: list[SqlName] = []
    agent: Literal["api", "cli"] = "api"
    contexts_budget: BudgetFront = BudgetFront()
    model: ModelFront = ModelFront()
    sections: dict[SectionId, SectionBudget] = {}
    approvals: ApprovalsFront = ApprovalsFront()
    people: PeopleFront | None = None


class EntityFront(Strict):
    description: Text | None = None
    agent: Ident | None = None
    reach: ReachValue | None = None
    # Where its runs speak; a hook may take them from its event instead.
    bot: Ident | None = None
    chat: RoomId | None = None
    thread: RoomId | None = None

    @field_validator("thread")
    @classmethod
    def _thread_in_a_chat(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Only when `chat` is absent: a chat that failed has its own message already.
        if value is not None and "chat" in info.data and info.data["chat"] is None:
            raise ValueError(
                f"thread '{value}' names a topic, but no `chat:` says which chat it is in — "
                "add `chat:`, or remove `thread:`"
            )
        return value


class HeartbeatFront(EntityFront):
    schedule: Text

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        problem = cron_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class HookFront(EntityFront):
    event: Text
    notice: bool = False  # post the run's outcome, one line, where the hook speaks


class InlineHookFront(Strict):
    """A hook a scenario declares in its own file: it reaches what the scenario reaches."""

    event: Text
    id: Ident | None = None
    prompt: Text | None = None
    bot: Ident | None = None
    chat: RoomId | None = None
    thread: RoomId | None = None


class ScenarioFront(EntityFront):
    hooks: list[InlineHookFront] = Field(default_factory=list)


class SkillFront(Strict):
    description: Text | None = None


class FeatureFront(Strict):
    enabled: bool = True
    description: Text | None = None
    title: Text | None = None


class StateSettings(Strict):
    rows: StateRows | None = None
    readTimeoutMs: ReadTimeoutMs | None = None  # noqa: N815


class OriginSettings(Strict):
    retentionDays: RetentionDays | None = None  # noqa: N815


class ProbeSettings(Strict):
    context: ProbeSeconds | None = None


class TenancyFront(Strict):
    context: Ident
    column: SqlName


class CodeFront(Strict):
    env: list[EnvName] = []
    network: bool = True


class ManifestFile(Strict):
    name: Text | None = None
    tenancy: TenancyFront | None = None
    code: CodeFront = CodeFront()
    contexts: BudgetFront = BudgetFront()
    state: StateSettings = StateSettings()
    messageOrigins: OriginSettings = OriginSettings()  # noqa: N815
    contentProbe: ProbeSettings = ProbeSettings()  # noqa: N815
    model: ModelFront = ModelFront()
    sections: dict[SectionId, SectionBudget] = {}
    approvals: ApprovalsFront = ApprovalsFront()
    people: PeopleFront | None = None


class TemplateRule(Strict):
    """A bot-default or DM rule: a template for many chats, so it binds no contexts."""

    role: Ident | None = None
    title: Text | None = None


class GroupRule(TemplateRule):
    contexts: dict[Ident, EntityKey | None] = {}


class BotRules(Strict):
    default: TemplateRule | None = None
    dm: TemplateRule | None = None
    chats: dict[ChatId, GroupRule] = {}


class AccessFile(Strict):
    bots: dict[Ident, BotRules] = {}
