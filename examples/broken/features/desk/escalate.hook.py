"""The escalation hook's gate (clean): the event names the ticket, which keys the reach."""

from keel.code import define_gate


def gate(event, ctx):
    return {"entity": event["ticket_id"]}


hook = define_gate(gate)
