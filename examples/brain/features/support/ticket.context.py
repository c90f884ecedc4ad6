"""The ticket context's code: link a turn to the ticket its input names, and say its SLA.

`match` links the ticket a message names (T-481), so the card shows that ticket only, with
no binding needed; a message that names none ("any news?") links the ticket named last
before it — in the message it replies to, or in the room's lines. `render` adds one line after the views: when this ticket's next update
is due, from its priority and the day's SLA targets (read-only, from the brain's state).
"""

import re

from keel.code import define_context

TICKET_ID = re.compile(r"\bT-\d+\b")

SLA = """
SELECT t.priority, s.first_reply_minutes, s.resolve_hours
FROM support_tickets AS t JOIN support_sla_targets AS s ON s.priority = t.priority
WHERE t.ticket_id = :ticket
"""


def match(turn, ctx):
    named = TICKET_ID.findall(turn.message)
    if named:
        return {"entity": named[0]}
    # None in the message ("any news?"): the ticket named last before it, in the message it
    # replies to or the room's lines (a run's turn: in its prompt) — all in `turn.input`.
    earlier = TICKET_ID.findall(turn.input)
    return {"entity": earlier[-1]} if earlier else None


def render(ticket, ctx):
    rows = ctx.query(SLA, {"ticket": ticket})
    if not rows:
        return []
    row = rows[0]
    line = (
        f"{ticket} is {row['priority']}: first reply within {row['first_reply_minutes']} "
        f"minutes, resolved within {row['resolve_hours']} hours."
    )
    return [{"key": "sla", "text": line}]


context = define_context(match=match, render=render)
