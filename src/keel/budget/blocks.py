"""A turn's linked contexts as blocks: each rendered from its views within its `chars`,
then fitted into the turn's budgets (`keel.budget.fit`).

The views come from `views`, a reader the caller hands in (the turn's, in its
transaction): it is called only for the links that may still attach, so a link stubbed
before its turn came (past `maxActive`) reads none. What brain code rendered for a
context (its sections, or its failure) is placed after its views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from keel.brain.constitution import Manifest
from keel.brain.files import MANIFEST_PATH
from keel.brain.knobs import TurnSettings, context_chars
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.budget.fit import Fitted, fit_turn, opened_by_name
from keel.budget.render import Block, render_block
from keel.budget.rows import ViewRows
from keel.link.values import Link

if TYPE_CHECKING:  # a render's answer is brain code's value; it is only read here
    from keel.code.values import RenderAnswer

Pair = tuple[str, str | None]


def fit_blocks(
    brain: Brain,
    settings: TurnSettings,
    links: Sequence[Link],
    views: Callable[[Link], Sequence[ViewRows]],
    code: Mapping[Pair, RenderAnswer] | None = None,
) -> Fitted:
    """Render the links that may attach (their views read by `views`, with their code's
    sections) and fit them into the turn's budgets. A link the agent opened by name is
    rendered as `context_open` renders it: instructions whole, views cut to what is left."""
    rendered = code or {}

    def render(link: Link) -> Block | None:
        code_ = rendered.get(link.pair)
        opened = opened_by_name(link)
        return render_views(brain, settings, link, views(link), code_, opened=opened)

    return fit_turn(links, render, settings.knobs, can_open=settings.opens)


def render_views(
    brain: Brain,
    settings: TurnSettings,
    link: Link,
    views: Sequence[ViewRows],
    code: RenderAnswer | None = None,
    *,
    opened: bool = False,
) -> Block | None:
    """One linked context's block from its views as read and what its code rendered, within
    its chars (None: too big; `opened`: instructions past its chars are kept, views stubbed)."""
    context = brain.contexts[link.context]
    sections = sections_of(code)
    return render_block(
        context=context.id,
        entity=link.entity,
        instructions=context.instructions,
        views=views,
        chars=settings.chars[context.id],
        sections=sections,
        sections_missing=code is not None and code.failure is not None,
        more_room=room_advice(context, settings.role, brain.manifest) if sections else None,
        opened=opened,
    )


def room_advice(context: ContextSpec, role: RoleSpec, manifest: Manifest) -> str:
    """Which setting gives the context more room: the tier that set its `chars` (the
    tiers `context_chars` resolves), or for the default, the context's own file."""
    chars = context_chars(context, role, manifest)
    if context.chars is not None:
        return f"raise chars: {chars} of {context.path}"
    if role.contexts_budget.chars is not None:
        return f"raise contexts_budget.chars: {chars} of {role.path}"
    if manifest.contexts.chars is not None:
        return f"raise contexts.chars: {chars} of {manifest.path or MANIFEST_PATH}"
    return f"set chars: in {context.path} (it is {chars} by default)"


def sections_of(code: RenderAnswer | None) -> tuple[tuple[str, str], ...]:
    """A render's sections as (key, text)."""
    return () if code is None else tuple((s.key, s.text) for s in code.sections)
