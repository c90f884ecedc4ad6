"""Links a turn to the ticket its message names (clean: loads and exports `context`)."""

import re

from keel.code import define_context

TICKET = re.compile(r"\bT-\d+\b")


def match(turn):
    found = TICKET.search(turn.input)
    return {"entity": found.group(0)} if found else None


context = define_context(match=match)
