"""Section budgets and the model's limits: the role's frontmatter, then MANIFEST, then defaults.

A budget is looked up by the section's exact id (`render.support_queue`), then by its
family (`render`), each in the role's `sections:` before MANIFEST's, before Keel's own
defaults. Budgets are in tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from keel.assemble.values import ModelLimits
from keel.brain.constitution import Manifest
from keel.brain.specs import ModelSpec, RoleSpec
from keel.budget.knobs import first

DEFAULT_BUDGETS: Mapping[str, int] = {
    "sys.time": 40,
    "identity": 200,
    "tenancy": 200,
    "rules": 800,
    "prompt": 3000,
    "skill": 1500,
    "context.catalog": 800,
    "tool": 400,
    "render": 800,
    "history": 4000,
    "context": 1500,
    "current": 4000,
}
DEFAULT_WINDOW = 128_000
DEFAULT_OUTPUT_RESERVE = 4_096


def family(section_id: str) -> str:
    """`render.x` → `render`, `skill.3` → `skill`, `context.a@b` → `context`."""
    if section_id == "context.catalog":
        return section_id
    return section_id.split(".", 1)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionBudgets:
    """Resolves a section's budget through the three tiers."""

    role: Mapping[str, int] = field(default_factory=dict)
    manifest: Mapping[str, int] = field(default_factory=dict)
    defaults: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))

    @classmethod
    def of(cls, role: RoleSpec | None, manifest: Manifest) -> SectionBudgets:
        return cls(
            role=dict(role.sections) if role is not None else {},
            manifest=dict(manifest.sections),
        )

    def __call__(self, section_id: str) -> int | None:
        kind = family(section_id)
        for tier in (self.role, self.manifest):
            for key in (section_id, kind):
                if key in tier:
                    return tier[key]
        return self.defaults.get(section_id, self.defaults.get(kind))

    def knob(self, section_id: str) -> str:
        """Where to raise this section's budget, in the words of the files."""
        return f"sections: {{ {section_id}: N }} in the role's frontmatter or MANIFEST"


def model_limits(role: RoleSpec | None, manifest: Manifest) -> ModelLimits:
    """The role's `model:`, then MANIFEST's, then defaults; allocation = window - reserve."""
    mine = role.model if role is not None else ModelSpec()
    brain = manifest.model
    window = first(mine.window, brain.window, default=DEFAULT_WINDOW)
    reserve = first(mine.output_reserve, brain.output_reserve, default=DEFAULT_OUTPUT_RESERVE)
    allocation = first(mine.input_allocation, brain.input_allocation, default=window - reserve)
    return ModelLimits(
        name=mine.name or brain.name or "default",
        window=window,
        output_reserve=reserve,
        input_allocation=allocation,
    )
