"""`--set KEY=VALUE`: a knob changed for a what-if, and the brain snapshot it makes.

Keys name the tier they change, in the files' own spelling:

    contexts.<knob>                      MANIFEST contexts: (chars, maxActive, turnChars)
    context.<id>.chars                   a context's own chars
    role.<id>.contexts_budget.<knob>     a role's contexts_budget:
    role.<id>.sections.<section id>      a role's section budget (tokens)
    role.<id>.model.<knob>               a role's model: (window, output_reserve, input_allocation)
    sections.<section id>                MANIFEST sections:
    model.<knob>                         MANIFEST model:
    state.rows                           MANIFEST state.rows

Values are checked with the same ranges as the brain's files (`keel.brain.schema`). The
brain is immutable values, so a changed knob is a new snapshot (`dataclasses.replace`);
nothing on disk changes. `keep` is refused: what-if re-fits the links each recorded turn
had, and `keep` changes which links later turns hold, which it does not replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from keel.brain.problems import did_you_mean
from keel.brain.schema import BudgetFront, ManifestFile, ModelFront, StateSettings
from keel.brain.snapshot import Brain
from keel.brain.specs import ModelSpec
from keel.errors import UsageError

# A contexts knob as written in files -> the ContextsBudget field it sets.
BUDGET_KNOBS = {
    "chars": "chars",
    "maxActive": "max_active",
    "turnChars": "turn_chars",
    "codeTimeoutMs": "code_timeout_ms",
}
MODEL_KNOBS = ("window", "output_reserve", "input_allocation")
KEEP_REFUSED = (
    "what-if re-fits the links each recorded turn had; keep changes which links later "
    "turns hold, which it does not replay — try keep on a copy of the brain instead"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Override:
    """One knob set for a what-if: where it lives (`scope`, `owner`), its name and value."""

    text: str
    scope: str  # "contexts", "context", "role.contexts_budget", "role.sections",
    # "role.model", "sections", "model", "state"
    owner: str | None  # the context or role id, for the scopes that have one
    name: str
    value: int


def parse_override(text: str) -> Override:
    """One `KEY=VALUE`, checked for its key's shape and its value's range."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"--set {text!r}: write KEY=VALUE, e.g. contexts.turnChars=20000")
    try:
        value = int(raw.strip())
    except ValueError:
        raise UsageError(
            f"--set {text!r}: the value {raw.strip()!r} is not a whole number"
        ) from None
    scope, owner, name, model, payload = _shape(text, key, value)
    _check(text, model, payload)
    return Override(text=text, scope=scope, owner=owner, name=name, value=value)


def _shape(
    text: str, key: str, value: int
) -> tuple[str, str | None, str, type[BaseModel], dict[str, Any]]:
    """The override's scope, owner and knob name, and the file model that checks its value."""
    head, _, rest = key.partition(".")
    if head == "contexts" and rest in BUDGET_KNOBS:
        return "contexts", None, rest, BudgetFront, {rest: value}
    if head == "context":
        owner, _, name = rest.partition(".")
        if owner and name == "chars":
            return "context", owner, name, BudgetFront, {name: value}
    if head == "role" and (found := _role_shape(rest, value)) is not None:
        return found
    if head == "sections" and rest:
        return "sections", None, rest, ManifestFile, {"sections": {rest: value}}
    if head == "model" and rest in MODEL_KNOBS:
        return "model", None, rest, ModelFront, {rest: value}
    if key == "state.rows":
        return "state", None, "rows", StateSettings, {"rows": value}
    if key.endswith(".keep"):
        raise UsageError(f"--set {text!r}: {KEEP_REFUSED}")
    raise UsageError(
        f"--set {text!r}: unknown knob {key!r} — write contexts.<chars|maxActive|turnChars>, "
        "context.<id>.chars, role.<id>.contexts_budget.<knob>, role.<id>.sections.<section>, "
        "role.<id>.model.<knob>, sections.<section>, model.<window|output_reserve|"
        "input_allocation> or state.rows"
    )


def _role_shape(
    rest: str, value: int
) -> tuple[str, str | None, str, type[BaseModel], dict[str, Any]] | None:
    owner, _, tail = rest.partition(".")
    group, _, name = tail.partition(".")
    if not owner:
        return None
    if group == "contexts_budget" and name in BUDGET_KNOBS:
        return "role.contexts_budget", owner, name, BudgetFront, {name: value}
    if group == "sections" and name:
        return "role.sections", owner, name, ManifestFile, {"sections": {name: value}}
    if group == "model" and name in MODEL_KNOBS:
        return "role.model", owner, name, ModelFront, {name: value}
    return None


def _check(text: str, model: type[BaseModel], payload: dict[str, Any]) -> None:
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"].lower()
        raise UsageError(f"--set {text!r}: {problem}") from None


def parse_overrides(texts: Sequence[str]) -> tuple[Override, ...]:
    """Every `--set`, in the order given (a later one of the same key wins)."""
    return tuple(parse_override(t) for t in texts)


def apply_overrides(brain: Brain, overrides: Sequence[Override]) -> Brain:
    """The brain with every override applied; an unknown context or role is refused."""
    for override in overrides:
        brain = _apply(brain, override)
    return brain


def _apply(brain: Brain, o: Override) -> Brain:
    manifest = brain.manifest
    if o.scope == "contexts":
        budget = replace(manifest.contexts, **{BUDGET_KNOBS[o.name]: o.value})
        return replace(brain, manifest=replace(manifest, contexts=budget))
    if o.scope == "sections":
        sections = dict(manifest.sections) | {o.name: o.value}
        return replace(brain, manifest=replace(manifest, sections=tuple(sections.items())))
    if o.scope == "model":
        model = _model(manifest.model, o.name, o.value)
        return replace(brain, manifest=replace(manifest, model=model))
    if o.scope == "state":
        return replace(brain, manifest=replace(manifest, state_rows=o.value))
    owner = o.owner or ""
    if o.scope == "context":
        context = brain.contexts.get(owner)
        if context is None:
            raise UsageError(
                f"--set {o.text!r}: no context '{owner}'{did_you_mean(owner, brain.contexts)}"
            )
        contexts = dict(brain.contexts) | {owner: replace(context, chars=o.value)}
        return replace(brain, contexts=contexts)
    role = brain.roles.get(owner)
    if role is None:
        raise UsageError(f"--set {o.text!r}: no role '{owner}'{did_you_mean(owner, brain.roles)}")
    if o.scope == "role.contexts_budget":
        role = replace(
            role, contexts_budget=replace(role.contexts_budget, **{BUDGET_KNOBS[o.name]: o.value})
        )
    elif o.scope == "role.sections":
        role = replace(role, sections=tuple((dict(role.sections) | {o.name: o.value}).items()))
    else:
        role = replace(role, model=_model(role.model, o.name, o.value))
    return replace(brain, roles=dict(brain.roles) | {owner: role})


def _model(model: ModelSpec, name: str, value: int) -> ModelSpec:
    if name == "window":
        return replace(model, window=value)
    if name == "output_reserve":
        return replace(model, output_reserve=value)
    return replace(model, input_allocation=value)
