"""Which roles can ever carry a feature context, from the brain alone.

A role carries contexts when it admits one (`contexts:`), when it is the `agent:` of a run
whose reach holds one, or when an access.yaml group rule naming it binds one. The answer
depends only on the brain snapshot, so what Keel tells a role about contexts (its rules
section) stays the same from turn to turn and keeps a provider's prompt cache warm.
"""

from __future__ import annotations

from keel.brain.snapshot import Brain

# The last snapshot asked about and its answer: a process serves one current brain, and
# the answer takes a walk over every entity and rule.
_last: tuple[Brain, frozenset[str]] | None = None


def roles_carrying_contexts(brain: Brain) -> frozenset[str]:
    """The ids of the roles some link can bring a feature context to."""
    global _last
    if _last is not None and _last[0] is brain:
        return _last[1]
    found = {ident for ident, role in brain.roles.items() if role.contexts}
    found.update(
        entity.agent
        for entity in brain.entities.values()
        if entity.agent is not None and brain.reach_of(entity)
    )
    found.update(
        rule.role for rule in brain.access.rules if rule.role is not None and rule.contexts
    )
    answer = frozenset(found)
    _last = (brain, answer)
    return answer
