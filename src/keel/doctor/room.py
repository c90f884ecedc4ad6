"""Room: whether each role's always-on contexts and its catalog fit its budgets.

Read from the files alone, before any turn is recorded: a role that admits more `always`
contexts than a turn carries (`maxActive`), or more of their characters than a turn may use
(`turnChars`), has some stubbed on every turn; a catalog over its `context.catalog` section
budget is cut. `keel import --role` sizes the roles it writes; this finds the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from keel.assemble.texts import catalog_text
from keel.brain.knobs import TurnSettings, turn_settings
from keel.brain.snapshot import Brain
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Lines, Scope
from keel.tokens.estimate import estimate_tokens

CATALOG = "context.catalog"
SIZER = "keel import --role does it for imported rules"


def check(scope: Scope) -> Iterator[Finding]:
    yield from role_room(scope.brain, sorted(scope.brain.roles), lines=scope.lines)


def role_room(
    brain: Brain, roles: Iterable[str], *, sizer: str = SIZER, lines: Lines | None = None
) -> Iterator[Finding]:
    """The room findings of these roles (ids of `brain.roles`), in the order given;
    `sizer` says what else sizes a role (`{role}` stands for its id); `lines`, when given,
    finds the line of the knob to raise (else of `contexts:`)."""
    for ident in roles:
        role = brain.roles[ident]
        settings = turn_settings(brain, role)
        where = _Where(path=role.path, lines=lines)
        how = sizer.format(role=ident)
        yield from _always(ident, where, settings, how)
        yield from _catalog(ident, where, settings, how)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Where:
    path: str | None
    lines: Lines | None

    def line(self, *knob: str) -> int | None:
        """The line of the knob in the role file, else of its `contexts:` list."""
        if self.lines is None:
            return None
        found = self.lines.key(self.path, *knob)
        return found if found is not None else self.lines.key(self.path, "contexts")


def _always(ident: str, where: _Where, settings: TurnSettings, how: str) -> Iterator[Finding]:
    always = settings.always
    knobs = settings.knobs
    over = len(always) - knobs.max_active
    if over > 0:
        yield found(
            "role.always-over",
            f"role '{ident}'",
            f"role '{ident}' admits {len(always)} always-on contexts, but a turn carries at "
            f"most {knobs.max_active} (maxActive): {over} of them "
            f"{'is' if over == 1 else 'are'} stubbed on every turn — raise "
            f"contexts_budget.maxActive in the role ({how}), or make some of them `ask`",
            file=where.path,
            line=where.line("contexts_budget", "maxActive"),
        )
    chars = sum(settings.chars[c] for c in always)
    if chars > knobs.turn_chars:
        yield found(
            "role.always-over",
            f"role '{ident}'",
            f"role '{ident}' admits always-on contexts of {chars:,} characters together, but a "
            f"turn's contexts may use {knobs.turn_chars:,} (turnChars): some are stubbed on "
            f"every turn — raise contexts_budget.turnChars in the role ({how}), or shorten or "
            "narrow those contexts",
            file=where.path,
            line=where.line("contexts_budget", "turnChars"),
        )


def _catalog(ident: str, where: _Where, settings: TurnSettings, how: str) -> Iterator[Finding]:
    budget = settings.budgets[CATALOG]
    if budget is None or not settings.catalog:
        return
    tokens = estimate_tokens(catalog_text(settings.catalog))
    if tokens > budget:
        yield found(
            "role.catalog-over",
            f"role '{ident}'",
            f"role '{ident}''s catalog of {len(settings.catalog)} ask contexts is about "
            f"{tokens:,} tokens, over its context.catalog budget of {budget:,} "
            f"({tokens * 100 // budget} %), so it is cut — raise sections: context.catalog in "
            f"the role ({how}), or admit fewer contexts",
            file=where.path,
            line=where.line("sections", CATALOG),
        )
