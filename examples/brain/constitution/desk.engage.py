"""The desk bot's chat policy: when it speaks up, and which ticket a message is about.

In the support forum and in customers' chats the desk answers every message that names a
ticket or asks for help, and links the ticket it names (a code link, held to the room's pin
like any other); anything else is left to the chat rules.
"""

import re

from keel.code import define_engage

TICKET_ID = re.compile(r"\bT-\d+\b")
HELP = re.compile(r"\b(help|refund|broken|order|parcel|ticket)\b", re.IGNORECASE)


def engage(message, ctx):
    named = TICKET_ID.findall(message.text or "")
    if not named and not HELP.search(message.text or ""):
        return None
    return {"engage": True, "attach": [{"context": "ticket", "entity": t} for t in named]}


engage = define_engage(engage)
