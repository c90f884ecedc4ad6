"""What doctor finds: one `Finding` per problem, and the `Report` that holds them in order.

Every check has a stable id, a group (the four headings of the report) and one level: a
`fail` means the brain does not do what its files say, a `warn` that it does but probably
not what was meant, a `note` something worth knowing. The ids are stable so scripts can
read `--json` output.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

Group = Literal["Brain entities", "Feature context code", "Chat access", "Feature contexts"]
Level = Literal["fail", "warn", "note"]

GROUPS: tuple[Group, ...] = (
    "Brain entities",
    "Feature context code",
    "Chat access",
    "Feature contexts",
)
LEVELS: tuple[Level, ...] = ("fail", "warn", "note")

# Every check, in report order: its group and its level.
CHECKS: dict[str, tuple[Group, Level]] = {
    "entity.skip": ("Brain entities", "fail"),
    "entity.agent": ("Brain entities", "fail"),
    "entity.skill": ("Brain entities", "fail"),
    "entity.state-view": ("Brain entities", "fail"),
    "entity.bot": ("Brain entities", "warn"),
    "approvals.strict": ("Brain entities", "warn"),
    "approvals.nobody": ("Brain entities", "warn"),
    "approvals.unknown-capability": ("Brain entities", "warn"),
    "approvals.unnamed": ("Brain entities", "warn"),
    "approvals.no-approver": ("Brain entities", "fail"),
    "approvals.chat": ("Brain entities", "fail"),
    "code.load": ("Feature context code", "fail"),
    "code.missing": ("Feature context code", "fail"),
    "code.orphan": ("Feature context code", "warn"),
    "code.probe": ("Feature context code", "warn"),
    "code.env": ("Feature context code", "warn"),
    "code.query": ("Feature context code", "warn"),
    "code.unloaded": ("Feature context code", "note"),
    "access.file": ("Chat access", "fail"),
    "access.rule": ("Chat access", "fail"),
    "access.unknown-context": ("Chat access", "fail"),
    "access.missing-key": ("Chat access", "warn"),
    "access.extra-key": ("Chat access", "fail"),
    "access.unknown-role": ("Chat access", "fail"),
    "tenancy.withheld": ("Chat access", "fail"),
    "tenancy.context": ("Chat access", "fail"),
    "tenancy.global-views": ("Chat access", "note"),
    "context.unreached": ("Feature contexts", "warn"),
    "context.run-unreached": ("Feature contexts", "warn"),
    "reach.unknown": ("Feature contexts", "fail"),
    "context.ask-description": ("Feature contexts", "warn"),
    "context.over-budget": ("Feature contexts", "warn"),
    "view.shared": ("Feature contexts", "warn"),
    "view.missing": ("Feature contexts", "fail"),
    "state.pending": ("Feature contexts", "warn"),
    "state.refused": ("Feature contexts", "fail"),
    "view.by-column": ("Feature contexts", "fail"),
    "view.widget-line": ("Feature contexts", "fail"),
    "view.unchecked": ("Feature contexts", "note"),
    "view.timeout": ("Feature contexts", "warn"),
    "view.slow": ("Feature contexts", "warn"),
    "role.unknown-context": ("Feature contexts", "warn"),
    "role.no-open": ("Feature contexts", "warn"),
    "view.by-unkeyed": ("Feature contexts", "warn"),
    "view.by-without-entity": ("Feature contexts", "warn"),
    "role.no-contexts": ("Feature contexts", "note"),
    "context.stubbed": ("Feature contexts", "warn"),
    "role.always-over": ("Feature contexts", "warn"),
    "role.catalog-over": ("Feature contexts", "warn"),
}
_ORDER = {check: index for index, check in enumerate(CHECKS)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One problem: which check found it, how bad it is, where, and what to do."""

    check: str
    group: Group
    level: Level
    subject: str
    file: str | None
    line: int | None
    message: str

    @property
    def where(self) -> str | None:
        """`file:line`, `file`, or None for a finding about the brain as a whole."""
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "group": self.group,
            "level": self.level,
            "subject": self.subject,
            "file": self.file,
            "line": self.line,
            "message": self.message,
        }


def found(
    check: str, subject: str, message: str, *, file: str | None = None, line: int | None = None
) -> Finding:
    """A finding of a known check; its group and level come from `CHECKS`."""
    group, level = CHECKS[check]
    return Finding(
        check=check,
        group=group,
        level=level,
        subject=subject,
        file=file,
        line=line,
        message=message,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """Every finding of one doctor run, in report order (group, check, file, line)."""

    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, findings: list[Finding]) -> Report:
        return cls(findings=tuple(sorted(findings, key=_sort_key)))

    @property
    def failed(self) -> bool:
        """Whether any check failed (the CLI exits 1)."""
        return any(f.level == "fail" for f in self.findings)

    def counts(self) -> Counter[Level]:
        """How many findings of each level."""
        return Counter(f.level for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """`{"checks": [...]}`, one object per finding, for scripts and `--json`."""
        return {"checks": [f.to_json() for f in self.findings]}


def _sort_key(finding: Finding) -> tuple[int, int, str, int, str]:
    return (
        GROUPS.index(finding.group),
        _ORDER.get(finding.check, len(_ORDER)),
        finding.file or "",
        finding.line or 0,
        finding.subject,
    )
