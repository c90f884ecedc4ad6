"""`import_rules`: a repository's coding-agent rules as one feature of a Keel brain.

One run reads every rule file the repository holds (see `keel.importers.discovery`), maps
each the way its tool applies it (`cursor`, `claude`, `copilot`, `windsurf`), and writes
`features/<feature>/<id>.context.md` — plus `<id>.context.py` for a rule that applies to
files — and, with `--role`, the role that admits them. It is idempotent: a second run over
the same sources changes nothing, a rule whose source is gone loses its files, and a file
the import did not write is never overwritten or removed (the rule that would need it is
refused, with the reason). Nothing is dropped in silence: every file that cannot be mapped
is reported with why, and the rest is still imported.

Everything read is data: source files go through the brain's bounded reader (see
`keel.importers.frontmatter`), text from them enters the files written only as quoted
literals (`keel.importers.generated`), each file is read back by the brain's own parser
before it is written — one the brain would refuse is a skip, with its reason — and every
write stays inside the brain (`keel.importers.writing`).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from keel.assemble.texts import catalog_text
from keel.brain import load_brain
from keel.brain.constitution import DEFAULT_MAX_ACTIVE, DEFAULT_TURN_CHARS
from keel.brain.files import MANIFEST_PATH
from keel.brain.knobs import SectionBudgets, model_limits
from keel.brain.specs import WhenWord
from keel.doctor.room import role_room
from keel.doctor.scope import Lines
from keel.errors import UsageError
from keel.importers.accounting import Outcomes, account
from keel.importers.claude import map_claude_rule, map_memory, map_skill
from keel.importers.copilot import map_copilot
from keel.importers.cursor import map_cursor, map_cursorrules
from keel.importers.dedupe import dedupe
from keel.importers.discovery import Found, Skill, discover
from keel.importers.excluding import Excluded, compile_excludes, exclude
from keel.importers.generated import (
    brain_refusal,
    code_text,
    context_chars,
    context_text,
    feature_text,
    instructions,
    marker,
)
from keel.importers.globs import escape
from keel.importers.ids import assign, is_id, slug
from keel.importers.nested import rescope, split
from keel.importers.owned import CODE, CONTEXT, BrainFiles, scan_brain
from keel.importers.reach import unmatched
from keel.importers.report import ImportedRule, ImportReport, RoleChange
from keel.importers.roles import CATALOG, Room, listing, plan_role
from keel.importers.rules import SELF_LINKING, Mapped, Notice, Rule
from keel.importers.windsurf import map_windsurf, map_windsurfrules
from keel.importers.writing import Writes, feature_problem
from keel.tokens.estimate import estimate_many, estimate_tokens


def import_rules(
    source: Path,
    brain: Path,
    *,
    feature: str | None = None,
    role: str | None = None,
    excludes: Sequence[str] = (),
    force: bool = False,
) -> ImportReport:
    """Import the rule files under `source` into `brain` as `features/<feature>/`.

    `excludes`: `.gitignore`-like patterns of source files to leave out (see
    `keel.importers.excluding`). `force`: overwrite a file of the feature's folder that
    `keel import` did not write (an imported file whose marker line was deleted) where a
    rule's file goes, instead of refusing that rule; each one is named in the warnings.
    """
    source_dir = _directory(source, "give the repository whose rules to import")
    brain_dir = _brain(brain)
    name = feature if feature is not None else slug(source_dir.name)
    if not is_id(name):
        raise UsageError(
            f"--feature {name!r}: not a usable feature name — use letters, digits, '_' and "
            f"'-', e.g. --feature {slug(name)}"
        )
    if role is not None and not is_id(role):
        raise UsageError(
            f"--role {role!r}: not a usable role id — use letters, digits, '_' and '-', "
            f"e.g. --role {slug(role)}"
        )
    patterns = compile_excludes(excludes)
    problem = feature_problem(brain_dir, name)
    if problem is not None:  # before anything is read
        raise UsageError(problem)
    left = exclude(discover(source_dir, skip=brain_dir), patterns)
    mapped = _map(source_dir, left.found)
    files = scan_brain(brain_dir, name)
    return _Import(
        brain_dir, source_dir, name, role, files, mapped, left, given=source, force=force
    ).run()


def _directory(path: Path, fix: str) -> Path:
    if not path.exists():
        raise UsageError(f"{path}: no such directory — {fix}")
    if not path.is_dir():
        raise UsageError(f"{path}: not a directory — {fix}")
    return path.resolve()


def _brain(path: Path) -> Path:
    """The brain directory, resolved; `UsageError` for a path that is not a brain.

    Stricter than the loader, which takes any folder with a `features/`: the import writes,
    and a repository of its own (many keep a `features/` folder) must not be written into.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: not a directory — give the brain directory to import into")
    if not (path / MANIFEST_PATH).is_file():
        raise UsageError(
            f"{path} is not a brain (no {MANIFEST_PATH}) — `keel init {path}` starts one"
        )
    return path.resolve()


def _map(root: Path, found: Found) -> list[Mapped]:
    mapped = [Mapped(skipped=found.stray)]
    mapped.extend(map_cursor(root, p) for p in found.cursor)
    for path in found.cursorrules:
        folder, _ = split(path)
        rules_folder = f"{folder}/.cursor/rules/" if folder else ".cursor/rules/"
        beside = any(p.startswith(rules_folder) for p in found.cursor)
        mapped.append(_nested(root, path, partial(_cursorrules, beside=beside)))
    mapped.extend(map_memory(root, p) for p in found.memory)
    for skill in found.skills:
        folder, inner = split(skill.folder)
        files = tuple(f.removeprefix(f"{folder}/") if folder else f for f in skill.files)
        sub = root / folder if folder else root
        mapped.append(rescope(map_skill(sub, Skill(folder=inner, files=files)), folder))
    mapped.extend(_nested(root, p, map_claude_rule) for p in found.claude_rules)
    mapped.extend(_nested(root, p, map_copilot) for p in found.copilot)
    mapped.extend(map_windsurf(root, p) for p in found.windsurf)
    mapped.extend(_nested(root, p, map_windsurfrules) for p in found.windsurfrules)
    return mapped


def _cursorrules(root: Path, path: str, *, beside: bool) -> Mapped:
    return map_cursorrules(root, path, beside_rules=beside)


def _nested(root: Path, path: str, mapper: Callable[[Path, str], Mapped]) -> Mapped:
    """Map a rule file of a sub-project's tool folder as its tool sees it there, then scope
    it to that folder (see `keel.importers.nested`); a root one as it is."""
    folder, inner = split(path)
    if not folder:
        return mapper(root, path)
    return rescope(mapper(root / folder, inner), folder)


@dataclass(frozen=True, slots=True)
class _Planned:
    """A rule's files as they will be written, and the rule as the report shows it."""

    files: tuple[tuple[str, str], ...]  # (brain path, text), the context first
    rule: ImportedRule
    warnings: tuple[Notice, ...]


class _Import:
    """One run: settle ids, plan each context's files, write, prune, update the role."""

    def __init__(
        self,
        brain: Path,
        source: Path,
        feature: str,
        role: str | None,
        files: BrainFiles,
        mapped: list[Mapped],
        left: Excluded,
        *,
        given: Path,
        force: bool,
    ) -> None:
        self.brain, self.source, self.feature, self.role = brain, source, feature, role
        self.given = given  # the source as the caller wrote it, for messages
        self.folder = f"features/{feature}"
        self.files = files
        self.found = left.found
        self.excluded = left.sources
        self.force = force
        self.rules, self.merged = dedupe([r for m in mapped for r in m.rules])
        self.warnings: list[Notice] = [*left.warnings, *(w for m in mapped for w in m.warnings)]
        self.skipped: list[Notice] = [*left.skipped, *(s for m in mapped for s in m.skipped)]
        self.warnings.extend(unmatched(self.rules, left.found.files))
        self.refused_rules: dict[str, str] = {}  # rule source -> the brain file refused
        self.out = Writes(brain)
        self.refused = self.out.refused  # one list: the files in the way, the writes refused

    def run(self) -> ImportReport:
        turn_chars, max_active = self._knobs()
        ids = assign(
            [(r.source, r.name) for r in self.rules],
            taken=self._taken() | self._excluded_ids(),
            previous=self.files.previous_ids(),
        )
        # An excluded source's files from an earlier run stay as they are: excluding is how
        # a user keeps the import away from them, not a way to delete them.
        keep = {p for p, s in self.files.owned.items() if s in self.excluded}
        placed = {r.source: ids[r.source] for r in self.rules if self._free(r, ids[r.source])}
        for rule in self.rules:
            if rule.source not in placed:
                keep.update(p for p, s in self.files.owned.items() if s == rule.source)
        imported: list[ImportedRule] = []
        # Every rule keeps its whole size; a role given is sized for them (`_role`), and
        # without one the rules large for a turn of the brain are warned about.
        room = turn_chars if self.role is None else None
        for plan in self._plans(placed, room):
            self.warnings.extend(plan.warnings)
            if self._write(plan, keep):
                imported.append(plan.rule)
        removed_ids = self._prune(keep, set(placed.values()))
        self._feature(imported)
        role = self._role(imported, removed_ids, max_active, turn_chars)
        admitting = self._admitting(imported) if self.role is None else ()
        if admitting:
            self._room(admitting)
        elif role is None:
            self._crowding(imported, max_active)
        self._window(imported)
        return ImportReport(
            source=str(self.source),
            brain=str(self.brain),
            feature=self.feature,
            rules=tuple(imported),
            written=tuple(self.out.written),
            updated=tuple(self.out.updated),
            removed=tuple(self.out.removed),
            unchanged=tuple(self.out.unchanged),
            role=role,
            warnings=tuple(self.warnings),
            skipped=tuple(sorted(self.skipped, key=lambda n: n.path)),
            refused=tuple(self.refused),
            hint=self._hint(imported, admitting),
            seen=account(
                self.found,
                Outcomes(
                    rules=self.rules,
                    imported=imported,
                    refused=self.refused_rules,
                    merged=self.merged,
                    skipped=self.skipped,
                    excluded=self.excluded,
                ),
            ),
        )

    def _catalog_room(self, imported: list[ImportedRule]) -> tuple[int, int]:
        """The catalog budget (tokens) the imported ask contexts' lines need — rounded up to
        a hundred — and what a role that sets none gets."""
        entries = tuple((r.context, r.description or "") for r in imported if r.when == ("ask",))
        needed = -(-estimate_tokens(catalog_text(entries)) // 100) * 100 if entries else 0
        default = SectionBudgets.of(None, load_brain(self.brain).manifest)(CATALOG)
        return needed, default or 0

    def _knobs(self) -> tuple[int, int]:
        budget = load_brain(self.brain).manifest.contexts
        turn_chars = budget.turn_chars or DEFAULT_TURN_CHARS
        return (
            turn_chars,
            budget.max_active if budget.max_active is not None else DEFAULT_MAX_ACTIVE,
        )

    def _taken(self) -> set[str]:
        """Context ids that belong to someone else (files directly in our folder excepted)."""
        taken: set[str] = set()
        for ident, paths in self.files.contexts.items():
            if any(
                p not in self.files.owned and posixpath.dirname(p) != self.folder for p in paths
            ):
                taken.add(ident)
        return taken

    def _excluded_ids(self) -> set[str]:
        """The ids an earlier run gave the sources now excluded, whose files stay."""
        return {i for s, i in self.files.previous_ids().items() if s in self.excluded}

    def _free(self, rule: Rule, ident: str) -> bool:
        """Whether the rule's files may be written; refuse it when an author's file, a link
        or anything but a plain file is there (an author's file only without --force)."""
        forced: list[Notice] = []
        for suffix in (CONTEXT, CODE):
            path = f"{self.folder}/{ident}{suffix}"
            ours = suffix == CONTEXT or _coded(rule)  # whether the rule writes this path
            problem = self.out.problem(path) if ours else None
            if problem is not None:
                self.refused.append(Notice(path=path, message=problem))
                self.refused_rules[rule.source] = path
                return False
            if path not in self.files.present or path in self.files.owned:
                continue
            if self.force and ours:
                forced.append(
                    Notice(
                        path=path,
                        message="not written by keel import; overwritten (--force) by the "
                        f"import of {rule.source}",
                    )
                )
                continue
            self.refused.append(Notice(path=path, message=_in_the_way(rule, suffix, ours)))
            self.refused_rules[rule.source] = path
            return False
        self.warnings.extend(forced)  # said only once the rule is sure to be written
        return True

    def _plans(self, placed: dict[str, str], turn_chars: int | None) -> list[_Planned]:
        """Each placed rule's files, every one read back by the brain's parser first; a rule
        whose file the brain would refuse is skipped with the reason and loses its place (a
        skill's text then names the file beside it by path, not by an id that is gone)."""
        while True:
            plans = [self._plan(r, placed, turn_chars) for r in self.rules if r.source in placed]
            refusals = [
                (plan.rule.source, path, reason)
                for plan in plans
                for path, text in plan.files
                if (reason := brain_refusal(path, text)) is not None
            ]
            if not refusals:
                return plans
            for source, path, reason in refusals:
                if placed.pop(source, None) is not None:
                    self.skipped.append(
                        Notice(
                            path=source,
                            message=f"the brain would refuse {path} made from it ({reason}) — "
                            "not imported",
                        )
                    )

    def _plan(self, rule: Rule, ids: dict[str, str], turn_chars: int | None) -> _Planned:
        ident = ids[rule.source]
        body = instructions(rule, ids)
        chars, warnings = context_chars(rule.source, ident, body, turn_chars)
        when: tuple[WhenWord, ...] = ("always",) if rule.trigger == "always" else ("ask",)
        files = [
            (
                f"{self.folder}/{ident}{CONTEXT}",
                context_text(
                    source=rule.source,
                    description=rule.description,
                    when=when,
                    chars=chars,
                    body=body,
                    also=rule.also,
                ),
            )
        ]
        if _coded(rule) and rule.dialect is not None:
            files.append(
                (
                    f"{self.folder}/{ident}{CODE}",
                    code_text(
                        source=rule.source, tool=rule.tool, dialect=rule.dialect, globs=rule.globs
                    ),
                )
            )
        imported = ImportedRule(
            source=rule.source,
            tool=rule.tool,
            context=ident,
            when=when,
            trigger=rule.trigger,
            chars=chars,
            description=rule.description,
            globs=rule.globs,
            code=files[1][0] if len(files) > 1 else None,
            also=rule.also,
        )
        return _Planned(files=tuple(files), rule=imported, warnings=warnings)

    def _write(self, plan: _Planned, keep: set[str]) -> bool:
        """Write the rule's files; when one is refused, keep what an earlier run wrote."""
        for path, text in plan.files:
            if not self.out.put(path, text):
                self.refused_rules[plan.rule.source] = path
                keep.update(p for p, s in self.files.owned.items() if s == plan.rule.source)
                return False
            keep.add(path)
        return True

    def _prune(self, keep: set[str], placed: set[str]) -> list[str]:
        """Remove the files earlier runs wrote whose rule is gone; the ids that went."""
        gone: list[str] = []
        for path in sorted(self.files.owned):
            if path in keep or not self.out.remove(path):
                continue
            name = path.rsplit("/", 1)[-1]
            if name.endswith(CONTEXT) and name.removesuffix(CONTEXT) not in placed:
                gone.append(name.removesuffix(CONTEXT))
        return gone

    def _feature(self, imported: list[ImportedRule]) -> None:
        path = f"{self.folder}/FEATURE.md"
        ours = path in self.files.written
        if not imported:
            if ours:
                self.out.remove(path)
            return
        if path in self.files.present and not ours:
            return
        self._put(path, feature_text(self.source.name, (r.tool for r in imported)))

    def _role(
        self, imported: list[ImportedRule], removed: list[str], max_active: int, turn_chars: int
    ) -> RoleChange | None:
        others = [p for r, paths in self.files.roles.items() if r != self.role for p in paths]
        self.warnings.extend(listing(self.brain, others, removed))
        if self.role is None:
            return None
        # The tools load every always-on rule and every rule whose files a prompt names,
        # with no cap: give the role room for all of them at once, on top of what a turn of
        # this brain carries anyway (the opens and bindings). Links that files bring come
        # before `always` ones, so room for the always-on alone would not keep them whole.
        linking = [r for r in imported if r.trigger in SELF_LINKING]
        linking_chars = sum(r.chars for r in linking)
        catalog_needed, catalog_default = self._catalog_room(imported)
        room = Room(
            needed=len(linking) + max_active if linking else 0,
            default=max_active,
            chars_needed=linking_chars + turn_chars if linking else 0,
            chars_default=turn_chars,
            catalog_needed=catalog_needed,
            catalog_default=catalog_default,
        )
        plan = plan_role(
            self.brain,
            self.role,
            feature=self.feature,
            source_name=self.source.name,
            files=self.files,
            add=[r.context for r in imported],
            drop=removed,
            asks=any(r.when == ("ask",) for r in imported),
            room=room,
        )
        self.warnings.extend(plan.warnings)
        self.refused.extend(plan.refused)
        written = plan.path is None or plan.text is None or self._put(plan.path, plan.text)
        return plan.change if written else None

    def _put(self, path: str, text: str) -> bool:
        """Write a file of the import's own (FEATURE.md, the role), read back first."""
        reason = brain_refusal(path, text)
        if reason is not None:
            self.refused.append(
                Notice(path=path, message=f"the brain would refuse it ({reason}) — not written")
            )
            return False
        return self.out.put(path, text)

    def _crowding(self, imported: Iterable[ImportedRule], max_active: int) -> None:
        """Warn when no role was given room for the always-on rules and they overflow."""
        always = [r.context for r in imported if r.when == ("always",)]
        # With --role given, the role was refused and says why; re-running alone won't do.
        again = "re-run with --role ROLE, which gives it room for them, " if not self.role else ""
        if len(always) > max_active:
            self.warnings.append(
                Notice(
                    path="constitution/MANIFEST.yaml",
                    message=f"{len(always)} imported contexts are always-on, but a turn carries "
                    f"at most contexts.maxActive ({max_active}); the rest arrive as one-line "
                    f"stubs the agent can open — {again}raise contexts.maxActive, or make some "
                    "of the source rules description- or glob-triggered",
                )
            )

    def _window(self, imported: list[ImportedRule]) -> None:
        """Warn when the always-on rules alone would not fit the model's input: no budget
        the import can set makes them fit, so the sources must change (or the model)."""
        always = {r.source for r in imported if r.when == ("always",)}
        bodies = [r.body for r in self.rules if r.source in always]
        if not bodies:
            return
        tokens = sum(estimate_many(bodies))
        brain = load_brain(self.brain)
        spec = brain.roles.get(self.role) if self.role is not None else None
        limits = model_limits(spec, brain.manifest)
        if tokens > limits.input_allocation:
            self.warnings.append(
                Notice(
                    path="constitution/MANIFEST.yaml",
                    message=f"the {len(bodies)} always-on rules are about {tokens:,} tokens, "
                    f"more than the model's input allocation ({limits.input_allocation:,} "
                    f"tokens, model {limits.name!r}) — no turn can carry them whole; make some "
                    "of the source rules description- or glob-triggered, or give the model a "
                    "larger window (model: in MANIFEST or the role)",
                )
            )

    def _admitting(self, imported: list[ImportedRule]) -> tuple[str, ...]:
        """The roles of the brain that admit any imported context (by id or `'*'`)."""
        if not imported:
            return ()
        roles = load_brain(self.brain).roles
        ids = [r.context for r in imported]
        return tuple(i for i in sorted(roles) if any(map(roles[i].admits, ids)))

    def _room(self, roles: Sequence[str]) -> None:
        """Without --role, size nothing but say which admitting role lacks room, and how
        to give it (doctor says the same from the files)."""
        brain = load_brain(self.brain)
        sizer = "re-running this import with --role {role} does it"
        for finding in role_room(brain, roles, sizer=sizer, lines=Lines(brain.root)):
            said = Notice(path=finding.file or "", message=finding.message, line=finding.line)
            self.warnings.append(said)

    def _hint(self, imported: list[ImportedRule], admitting: Sequence[str]) -> str | None:
        if not imported and not self.found.count:
            if self.excluded:
                return f"every rule file found in {self.given} was excluded — nothing to import"
            return f"no rule files found in {self.given} — nothing to import"
        if self.role is not None or not imported or admitting:
            return None
        return (
            "no role admits these contexts yet, so no turn carries them — re-run with "
            "--role ROLE (an existing role gets them in contexts:, a new one is created), "
            "or list their ids in a role's contexts:"
        )


def _in_the_way(rule: Rule, suffix: str, ours: bool) -> str:
    """Why an author's file at one of the rule's paths keeps the rule out, and the ways on."""
    if suffix == CODE and not ours:
        why = f"beside the context for {rule.source} it would become that context's code"
        ways = "move the file away"  # --force writes only the rule's own files
    else:
        why = f"the context for {rule.source} needs its name"
        ways = (
            # The source as an exact pattern: anchored, its glob characters escaped.
            f"move the file away, re-run with --exclude {shlex.quote('/' + escape(rule.source))} "
            "to keep it as "
            "it is, or with --force to overwrite it"
        )
    return (
        f"not written by keel import, and {why} — left alone, so that rule is not imported; "
        f"{ways} (or, if it is an imported file you edited, put back its marker line: "
        f"{marker(rule.source)!r}), then re-run"
    )


def _coded(rule: Rule) -> bool:
    """Whether the rule gets a `.context.py` (it applies to the files its globs match)."""
    return rule.trigger == "glob" and rule.dialect is not None
