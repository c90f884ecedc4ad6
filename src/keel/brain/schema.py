"""The strict shapes of brain files, checked at the boundary with pydantic.

Every model forbids unknown keys, so a misspelt key fails the file's load (with a
did-you-mean, see `keel.brain.problems`) rather than leaving a spec that quietly does less
than its author wrote.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    field_validator,
)

from keel.brain.specs import WhenWord

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
Ident = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=128)]
# SQL identifiers of views and columns; always quoted when used, but kept plain here.
SqlName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=63)]
Text = Annotated[str, StringConstraints(min_length=1)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
ContextName = Annotated[str, StringConstraints(pattern=r"^(\*|[A-Za-z0-9][A-Za-z0-9_-]*)$")]
CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


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
    entity: Text | None = None


# A list item is either a plain name or a mapping. Choosing the branch by the item's shape
# makes pydantic report the problems of that branch only, not of both.
NAME_TAG, ENTRY_TAG = "as-name", "as-mapping"
UNION_TAGS = frozenset({NAME_TAG, ENTRY_TAG})


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


class ContextFront(Strict):
    description: Text | None = None
    entity: Text | None = None
    when: list[WhenWord]
    data: DataValue = []
    chars: PositiveInt | None = None
    keep: NonNegativeInt | None = None

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
    chars: PositiveInt | None = None
    maxActive: NonNegativeInt | None = None  # noqa: N815 - the file's own spelling
    turnChars: PositiveInt | None = None  # noqa: N815
    keep: NonNegativeInt | None = None
    codeTimeoutMs: PositiveInt | None = None  # noqa: N815


class ModelFront(Strict):
    name: Text | None = None
    window: PositiveInt | None = None
    output_reserve: NonNegativeInt | None = None
    input_allocation: PositiveInt | None = None


class RoleFront(Strict):
    description: Text | None = None
    contexts: list[ContextName] | None = None
    capabilities: list[Text] = []
    skills: list[Ident] = []
    state: list[SqlName] = []
    agent: Literal["api", "cli"] = "api"
    contexts_budget: BudgetFront = BudgetFront()
    model: ModelFront = ModelFront()
    sections: dict[Text, PositiveInt] = {}


class EntityFront(Strict):
    description: Text | None = None
    agent: Ident | None = None
    reach: ReachValue | None = None


class HeartbeatFront(EntityFront):
    schedule: Text

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        fields = value.split()
        if len(fields) not in (5, 6) or not all(CRON_FIELD.match(f) for f in fields):
            raise ValueError(
                f"'{value}' is not a cron schedule — write five fields, "
                "minute hour day month weekday, e.g. '0 19 * * *'"
            )
        return value


class HookFront(EntityFront):
    event: Text


class ScenarioFront(EntityFront):
    pass


class SkillFront(Strict):
    description: Text | None = None


class FeatureFront(Strict):
    enabled: bool = True
    description: Text | None = None
    title: Text | None = None


class StateSettings(Strict):
    rows: NonNegativeInt | None = None


class OriginSettings(Strict):
    retentionDays: NonNegativeInt | None = None  # noqa: N815


class ProbeSettings(Strict):
    context: Annotated[float, Field(ge=0)] | None = None


class ManifestFile(Strict):
    name: Text | None = None
    contexts: BudgetFront = BudgetFront()
    state: StateSettings = StateSettings()
    messageOrigins: OriginSettings = OriginSettings()  # noqa: N815
    contentProbe: ProbeSettings = ProbeSettings()  # noqa: N815
    model: ModelFront = ModelFront()
    sections: dict[Text, PositiveInt] = {}


class TemplateRule(Strict):
    """A bot-default or DM rule: a template for many chats, so it binds no contexts."""

    role: Ident | None = None
    title: Text | None = None


class GroupRule(TemplateRule):
    contexts: dict[Ident, Text | None] = {}


class BotRules(Strict):
    default: TemplateRule | None = None
    dm: TemplateRule | None = None
    chats: dict[Text, GroupRule] = {}


class AccessFile(Strict):
    bots: dict[Ident, BotRules] = {}
