"""The gate of the skip hook: one hook serves every practice of the feature.

The event says which practice was skipped (`skill` is knm, listen, write or read), so the
fire reaches that practice's context alone instead of the hook's layout reach.
"""

from keel.code import define_gate


def gate(event, ctx):
    return {"reach": [{"context": event["skill"]}]}


hook = define_gate(gate)
