"""The gate of the skip hook: one hook serves every practice of the feature.

The event says which practice was skipped (`skill` is knm, listen, write or read), so the
fire reaches that practice's context alone instead of the hook's layout reach. An event
that names no practice keeps the hook's own reach.
"""

from keel.code import define_gate


def gate(event, ctx):
    skill = event.get("skill")
    return {"reach": [{"context": skill}]} if skill else None


hook = define_gate(gate)
