"""Which roles can ever carry a feature context, from the brain alone.

A role carries contexts when it admits one (`contexts:`), when it is the `agent:` of a run
whose reach holds one, or when an access.yaml group rule naming it binds one. The answer
depends only on the brain snapshot, so what Keel tells a role about contexts (its rules
section) stays the same from turn to turn and keeps a provider's prompt cache warm.
"""

from __future__ import annotations

from keel.brain.snapshot import Brain

# The answers for the snapshots asked about last, the latest last: a process serves one
# current brain (a service or a benchmark, a few side by side), and the answer takes a
# walk over every entity and rule. Each turn resolves it, so one snapshot's answer must
# not push out another's that is still in use: one asked about again moves to the end.
_KEPT_SNAPSHOTS = 4
_last: list[tuple[Brain, frozenset[str]]] = []


def roles_carrying_contexts(brain: Brain) -> frozenset[str]:
    """The ids of the roles some link can bring a feature context to."""
    global _last  # swapped whole, so a thread never reads it half changed
    kept = _last
    for known, answer in reversed(kept):
        if known is brain:
            if kept[-1][0] is not brain:
                _last = [*(e for e in kept if e[0] is not brain), (brain, answer)]
            return answer
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
    _last = [*kept[-(_KEPT_SNAPSHOTS - 1) :], (brain, answer)]
    return answer
