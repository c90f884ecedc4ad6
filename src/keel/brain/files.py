"""Parsing one brain file into a spec, by what its path says it is.

A file is known by its suffix (`<id>.context.md`, `<id>.agent.md`, ...) and its location
(`features/<feature>/...`, `constitution/`, `state/`). Parsing reads the file and returns
a `Parsed` — the spec, or the problems that kept it out. It never raises for bad content.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError

from keel.brain import limits, schema
from keel.brain.access import broken, parse_access
from keel.brain.constitution import (
    DEFAULT_CONTENT_PROBE_SECONDS,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_STATE_READ_TIMEOUT_MS,
    DEFAULT_STATE_ROWS,
    CodeAccess,
    Manifest,
    Tenancy,
)
from keel.brain.document import Document, decode, is_utf8, parse_yaml, split
from keel.brain.problems import validation_errors
from keel.brain.reading import read_file
from keel.brain.specs import (
    WHEN_WORDS,
    ApprovalPolicy,
    ContextsBudget,
    ContextSpec,
    EntityKind,
    EntitySpec,
    FeatureSpec,
    InlineHook,
    ModelSpec,
    People,
    ReachEntry,
    RoleSpec,
    SkillSpec,
    Skip,
    SqlFile,
    ViewRef,
    WidgetSpec,
)
from keel.errors import ContentError

M = TypeVar("M", bound=BaseModel)

Kind = Literal[
    "context",
    "role",
    "heartbeat",
    "hook",
    "scenario",
    "skill",
    "feature",
    "manifest",
    "access",
    "sql",
    "code",
    "engage",
]

MARKDOWN_KINDS: dict[str, Kind] = {
    ".context.md": "context",
    ".agent.md": "role",
    ".heartbeat.md": "heartbeat",
    ".hook.md": "hook",
    ".scenario.md": "scenario",
    ".skill.md": "skill",
}
CODE_SUFFIXES = (".context.py", ".hook.py", ".pipeline.py")
ENGAGE_SUFFIX = ".engage.py"
MANIFEST_PATH = "constitution/MANIFEST.yaml"
ACCESS_PATH = "constitution/access.yaml"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a brain file sits: its kind, its id, its feature and its directory in it."""

    kind: Kind
    id: str
    feature: str = ""
    dir: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Parsed:
    """The result of parsing one file: a spec, or the problems that kept it out."""

    path: str
    location: Location
    spec: Any = None
    errors: tuple[ContentError, ...] = ()


def location_of(path: str) -> Location | ContentError | None:
    """What a brain-relative POSIX path is; None for files Keel does not read."""
    found = _location(path)
    if isinstance(found, tuple):  # a name that cannot be used: (path as shown, reason)
        return ContentError(*found)
    return found


# A load asks twice per file (listing, parsing), and every reload asks again.
@functools.lru_cache(maxsize=1 << 16)
def _location(path: str) -> Location | tuple[str, str] | None:
    parts = path.split("/")
    name = parts[-1]
    if parts[0] in ("features", "constitution", "state") and not is_utf8(path):
        # os.scandir hands undecodable bytes over as lone surrogates, which no message,
        # terminal or database can carry: report the name with them replaced.
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return (shown, "the name is not valid UTF-8 — rename it")
    if path == MANIFEST_PATH:
        return Location("manifest", "MANIFEST")
    if path == ACCESS_PATH:
        return Location("access", "access")
    if parts[0] == "state" and len(parts) == 2 and name.endswith(".sql"):
        return Location("sql", name)
    if parts[0] == "constitution" and len(parts) == 2 and name.endswith(ENGAGE_SUFFIX):
        # A bot's chat policy: `constitution/<bot>.engage.py`.
        return Location("engage", name.removesuffix(ENGAGE_SUFFIX))
    if parts[0] != "features":
        return None
    kind, ident = _kind_of(name)
    if kind is None:
        return None
    if len(parts) < 3:
        return (
            path,
            f"a brain file must sit inside a feature — move it to features/<feature>/{name}",
        )
    feature, folder = parts[1], tuple(parts[2:-1])
    if kind == "feature" and folder:
        return (
            path,
            f"FEATURE.md belongs at the feature root — move it to features/{feature}/FEATURE.md",
        )
    return Location(kind, ident, feature, folder)


def _kind_of(name: str) -> tuple[Kind | None, str]:
    if name == "FEATURE.md":
        return "feature", ""
    for suffix, kind in MARKDOWN_KINDS.items():
        if name.endswith(suffix):
            return kind, name[: -len(suffix)]
    for suffix in CODE_SUFFIXES:
        if name.endswith(suffix):
            return "code", name
    return None, ""


def parse_file(root: Path, path: str, location: Location, raw: bytes | None = None) -> Parsed:
    """Parse one file (reading it unless its bytes are given); problems come back inside.

    access.yaml always yields an `Access`, even when it fails: a failed rule, or a file
    that failed whole, must refuse turns, which no rules at all would not.
    """
    try:
        if raw is None:
            raw = read_file(str(root), path)
        if location.kind == "access":
            access, problems = parse_access(path, _yaml_text(path, raw, _EMPTY_ACCESS))
            return Parsed(path, location, spec=access, errors=tuple(problems))
        return Parsed(path, location, spec=_parse(path, location, raw))
    except ContentError as exc:
        if location.kind == "access":
            return Parsed(path, location, spec=broken(path, [exc])[0], errors=(exc,))
        return _failed(path, location, [exc], raw)
    except _Invalid as exc:
        return _failed(path, location, exc.errors, raw)


def _failed(path: str, location: Location, errors: list[ContentError], raw: bytes | None) -> Parsed:
    """A file that did not load; MANIFEST still yields the settings that guard data."""
    spec = _broken_manifest(path, errors[0], raw) if location.kind == "manifest" else None
    return Parsed(path, location, spec=spec, errors=tuple(errors))


def _broken_manifest(path: str, error: ContentError, raw: bytes | None) -> Manifest:
    """The settings of a MANIFEST that failed: defaults, except `tenancy:`, `approvals:`
    and `people:`.

    A broken file must never widen what a room sees, what runs without a person, or who
    decides. Each of the three is read on its own: as written when the file still states it
    validly; else tenancy is unknown (pinned rooms withhold their views), every call above
    `safe` waits for approval, and nobody may decide a card until the file is fixed.
    """
    data = _salvageable(path, raw)
    tenancy = _alone(schema.TenancyFront, data.get("tenancy"))
    approvals = _alone(schema.ApprovalsFront, data.get("approvals"))
    people = _alone(schema.PeopleFront, data.get("people"))
    if people is None:
        # Who decides cannot be read (the YAML is broken, the key misspelt, its value
        # wrong): nobody may, rather than anyone who can reply — the room included.
        people = schema.PeopleFront(owners=[])
    return Manifest(
        path=path,
        broken=Skip(path=error.path, reason=error.reason, line=error.line),
        tenancy=None
        if tenancy is None
        else Tenancy(context=tenancy.context, column=tenancy.column),
        approvals=STRICT_APPROVALS if approvals is None else _approvals(approvals),
        people=_people(people),
    )


# Who decides under a MANIFEST whose `people:` cannot be read: nobody.
NOBODY = People(owners=())
STRICT_APPROVALS = ApprovalPolicy(decisions=(("moderate", "required"), ("dangerous", "required")))


def _salvageable(path: str, raw: bytes | None) -> dict[str, Any]:
    """The file's top-level mapping, when its YAML reads at all; else nothing."""
    if raw is None:
        return {}
    try:
        data = parse_yaml(path, decode(path, raw))
    except ContentError:
        return {}
    return data if isinstance(data, dict) else {}


def _alone(model: type[M], value: Any) -> M | None:
    if not isinstance(value, dict):
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


_EMPTY_SQL = (
    "the file is empty — write the SQL it should apply (CREATE TABLE, CREATE VIEW, INSERT), "
    "or delete it"
)
_EMPTY_MANIFEST = "the file is empty — write the settings to change, or delete the file"
# An access.yaml emptied by accident (a failed write, a bad merge) must not read as "no
# rules": that would unpin every room. Saying so takes one line.
_EMPTY_ACCESS = (
    "the file is empty, so no rule can be read and every turn is refused — write "
    "`bots: {}` if no chat has a rule, or delete the file"
)


def _yaml_text(path: str, raw: bytes, empty: str) -> str:
    if not raw.strip():
        raise ContentError(path, empty)
    return decode(path, raw)


class _Invalid(Exception):
    def __init__(self, errors: list[ContentError]) -> None:
        self.errors = errors


_ID = re.compile(schema.ID_PATTERN)


def _parse(path: str, location: Location, raw: bytes) -> Any:
    if location.kind in ("code", "engage"):
        return path
    if location.kind == "sql":
        return SqlFile(path=path, text=decode(path, raw, empty=_EMPTY_SQL))
    if location.kind == "manifest":
        text = _yaml_text(path, raw, _EMPTY_MANIFEST)
        data = parse_yaml(path, text)
        return _manifest(path, _validate(schema.ManifestFile, data, path, text, 1))
    text = decode(path, raw)
    if location.kind != "feature" and not _ID.match(location.id):
        raise ContentError(
            path,
            f"'{location.id}' is not a usable id — name the file with letters, digits, '_' "
            "and '-' only",
        )
    doc = split(path, text)
    return _BUILDERS[location.kind](doc, location)


def _validate(model: type[M], data: Any, path: str, text: str, first_line: int) -> M:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ContentError(
            path, "the frontmatter must be a mapping of keys to values", line=first_line
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _Invalid(
            validation_errors(path, model, exc, text=text, first_line=first_line)
        ) from None


def _front(model: type[M], doc: Document) -> M:
    return _validate(model, doc.front, doc.path, doc.front_text, doc.front_line)


def _context(doc: Document, location: Location) -> ContextSpec:
    fields = _plain_context(doc.front)
    if fields is None:
        front = _front(schema.ContextFront, doc)
        fields = {
            "description": front.description,
            "entity": front.entity,
            "when": frozenset(front.when),
            "data": tuple(
                ViewRef(view=d) if isinstance(d, str) else ViewRef(view=d.view, by=d.by)
                for d in front.data
            ),
            "chars": front.chars,
            "keep": front.keep,
            "code_timeout_ms": front.codeTimeoutMs,
            "widget": _widget(front.widget),
        }
    return ContextSpec(
        id=location.id,
        feature=location.feature,
        path=doc.path,
        dir=location.dir,
        instructions=doc.body,
        **fields,
    )


def _widget(front: schema.WidgetFront | None) -> WidgetSpec | None:
    if front is None:
        return None
    line = (front.line,) if isinstance(front.line, str) else tuple(front.line)
    return WidgetSpec(view=front.view, line=line, title=front.title)


# What `schema.ContextFront` takes as it is, checked without building the model: its keys,
# and for each the exact types and bounds the model's own validators accept. A widget is
# a mapping checked against `data:`: the model always reads it.
_CONTEXT_KEYS = frozenset(schema.ContextFront.model_fields) - {"widget"}
_CONTEXT_NUMBERS = (
    ("chars", "chars", limits.CHARS),
    ("keep", "keep", limits.KEEP),
    ("codeTimeoutMs", "code_timeout_ms", limits.CODE_TIMEOUT_MS),
)
_SQL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")  # schema.SqlName


def _plain_context(front: Any) -> dict[str, Any] | None:
    """A context's fields when its frontmatter is plainly valid: only words, lists of
    words and whole numbers in range, each where `schema.ContextFront` wants it. None for
    anything else, which the model then checks and, when wrong, explains with its line.
    Most contexts are such: the model's validation cost as much as parsing them."""
    if type(front) is not dict or "when" not in front or not front.keys() <= _CONTEXT_KEYS:
        return None
    when = front["when"]
    if type(when) is not list or not when:
        return None
    for word in when:
        if type(word) is not str or word not in WHEN_WORDS:
            return None
    fields: dict[str, Any] = {"when": frozenset(when)}
    for key in ("description", "entity"):
        text = front.get(key)
        if text is not None and (type(text) is not str or not text):
            return None
        fields[key] = text
    data = _plain_data(front.get("data", []))
    if data is None:
        return None
    fields["data"] = data
    for key, field, bounds in _CONTEXT_NUMBERS:
        number = front.get(key)
        if number is not None and (
            type(number) is not int or not bounds.low <= number <= bounds.high
        ):
            return None
        fields[field] = number
    return fields


def _plain_data(data: Any) -> tuple[ViewRef, ...] | None:
    """`data:` as views, when every item is a view's name or `{view, by}` of names."""
    if type(data) is not list:
        return None
    views = []
    for item in data:
        if type(item) is str:
            view, by = item, None
        elif type(item) is dict and "view" in item and item.keys() <= {"view", "by"}:
            view, by = item["view"], item.get("by")
            if by is not None and (type(by) is not str or not _SQL_NAME.match(by)):
                return None
        else:
            return None
        if type(view) is not str or view == "instructions" or not _SQL_NAME.match(view):
            return None
        views.append(ViewRef(view=view, by=by))
    return tuple(views)


def _budget(front: schema.BudgetFront) -> ContextsBudget:
    return ContextsBudget(
        chars=front.chars,
        max_active=front.maxActive,
        turn_chars=front.turnChars,
        keep=front.keep,
        code_timeout_ms=front.codeTimeoutMs,
    )


def _model(front: schema.ModelFront) -> ModelSpec:
    return ModelSpec(
        name=front.name,
        window=front.window,
        output_reserve=front.output_reserve,
        input_allocation=front.input_allocation,
    )


def _approvals(front: schema.ApprovalsFront) -> ApprovalPolicy:
    # Risk classes first, then capabilities in file order: the policy reads as written.
    risks = [(k, v) for k in ("safe", "moderate", "dangerous") if (v := getattr(front, k))]
    return ApprovalPolicy(
        decisions=(*risks, *(front.model_extra or {}).items()),
        timeout=front.timeout,
        chat=front.chat,
    )


def _people(front: schema.PeopleFront | None) -> People | None:
    if front is None:
        return None
    return People(
        owners=None if front.owners is None else tuple(dict.fromkeys(front.owners)),
        approvers=tuple((k, tuple(dict.fromkeys(v))) for k, v in front.approvers.items()),
    )


def _role(doc: Document, location: Location) -> RoleSpec:
    front = _front(schema.RoleFront, doc)
    return RoleSpec(
        id=location.id,
        feature=location.feature,
        path=doc.path,
        persona=doc.body,
        description=front.description,
        contexts=None if front.contexts is None else tuple(front.contexts),
        capabilities=tuple(front.capabilities),
        skills=tuple(front.skills),
        state=tuple(front.state),
        agent=front.agent,
        contexts_budget=_budget(front.contexts_budget),
        model=_model(front.model),
        sections=tuple(front.sections.items()),
        approvals=_approvals(front.approvals),
        people=_people(front.people),
    )


def _reach(value: schema.ReachValue | None) -> tuple[ReachEntry, ...] | None:
    if value is None:
        return None
    return tuple(
        ReachEntry(context=r)
        if isinstance(r, str)
        else ReachEntry(context=r.context, entity=r.entity)
        for r in value
    )


_ENTITY_MODELS: dict[str, type[schema.EntityFront]] = {
    "heartbeat": schema.HeartbeatFront,
    "hook": schema.HookFront,
    "scenario": schema.ScenarioFront,
}


def _entity(doc: Document, location: Location) -> EntitySpec:
    model = _ENTITY_MODELS[location.kind]
    front = _front(model, doc)
    return EntitySpec(
        kind=cast(EntityKind, location.kind),
        id=location.id,
        feature=location.feature,
        path=doc.path,
        dir=location.dir,
        prompt=doc.body,
        agent=front.agent,
        description=front.description,
        reach=_reach(front.reach),
        schedule=getattr(front, "schedule", None),
        event=getattr(front, "event", None),
        notice=getattr(front, "notice", False),
        bot=front.bot,
        chat=front.chat,
        thread=front.thread,
        hooks=tuple(
            InlineHook(
                event=h.event, id=h.id, prompt=h.prompt, bot=h.bot, chat=h.chat, thread=h.thread
            )
            for h in getattr(front, "hooks", ())
        ),
    )


def _skill(doc: Document, location: Location) -> SkillSpec:
    front = _front(schema.SkillFront, doc)
    return SkillSpec(
        id=location.id,
        feature=location.feature,
        path=doc.path,
        text=doc.body,
        description=front.description,
    )


def _feature(doc: Document, location: Location) -> FeatureSpec:
    front = _front(schema.FeatureFront, doc)
    return FeatureSpec(
        id=location.feature, path=doc.path, enabled=front.enabled, description=front.description
    )


_BUILDERS = {
    "context": _context,
    "role": _role,
    "heartbeat": _entity,
    "hook": _entity,
    "scenario": _entity,
    "skill": _skill,
    "feature": _feature,
}


def _manifest(path: str, front: schema.ManifestFile) -> Manifest:
    probe = front.contentProbe.context
    return Manifest(
        path=path,
        name=front.name,
        contexts=_budget(front.contexts),
        state_rows=DEFAULT_STATE_ROWS if front.state.rows is None else front.state.rows,
        state_read_timeout_ms=(
            DEFAULT_STATE_READ_TIMEOUT_MS
            if front.state.readTimeoutMs is None
            else front.state.readTimeoutMs
        ),
        retention_days=(
            DEFAULT_RETENTION_DAYS
            if front.messageOrigins.retentionDays is None
            else front.messageOrigins.retentionDays
        ),
        content_probe_seconds=DEFAULT_CONTENT_PROBE_SECONDS if probe is None else probe,
        model=_model(front.model),
        sections=tuple(front.sections.items()),
        tenancy=None
        if front.tenancy is None
        else Tenancy(context=front.tenancy.context, column=front.tenancy.column),
        code=CodeAccess(env=tuple(dict.fromkeys(front.code.env)), network=front.code.network),
        approvals=_approvals(front.approvals),
        people=_people(front.people),
    )


def posix(path: str) -> str:
    """A relative path in the brain's own spelling (forward slashes)."""
    return path.replace(os.sep, "/")
