"""Link a turn to the ticket its input names (T-481), so the card shows that ticket only."""

import re

from keel.code import define_context

TICKET_ID = re.compile(r"\bT-\d+\b")


def match(turn):
    found = TICKET_ID.search(turn.input)
    return {"entity": found.group(0)} if found else None


context = define_context(match=match)
