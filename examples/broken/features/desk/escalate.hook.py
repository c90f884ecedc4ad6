"""The escalation hook's gate: the event names the ticket, which keys the reach.

FAULT code.probe: it reads event["ticket_id"] with no default, so an event without one
(doctor --probe's empty event) fails the fire instead of keeping the hook's own reach.
"""

from keel.code import define_gate


def gate(event, ctx):
    return {"entity": event["ticket_id"]}


hook = define_gate(gate)
