"""A small brain for a coding agent's doors, and the words that show what a turn sent.

`dev` is a coding agent (`agent: cli`) in the shop's repository: the house style rides
every turn (`always`), and the ticket it works on rides while its chat is bound to it.
`viewer` may read but not bind; `auditor` may only check the brain.
"""

from __future__ import annotations

DEV_BRAIN: dict[str, str | bytes] = {
    "constitution/MANIFEST.yaml": "name: shop-dev\n",
    "constitution/access.yaml": (
        "bots:\n  cli:\n    default: { role: dev }\n  review:\n    default: { role: viewer }\n"
    ),
    "state/001_tickets.sql": (
        "CREATE TABLE shop_tickets (ticket_id TEXT PRIMARY KEY, title TEXT, status TEXT);\n"
        "CREATE VIEW shop_ticket AS SELECT ticket_id, title, status FROM shop_tickets;\n"
        "INSERT INTO shop_tickets VALUES ('T-1', 'Checkout button is grey', 'open');\n"
        "INSERT INTO shop_tickets VALUES ('T-2', 'Refund email bounces', 'open');\n"
    ),
    "features/shop/FEATURE.md": "---\ndescription: The shop's code.\n---\n",
    "features/shop/dev.agent.md": (
        "---\n"
        "description: The coding agent working on the shop.\n"
        "contexts: [style, ticket]\n"
        "capabilities: [context:read, context:bind, access:read, ledger:read, doctor:read]\n"
        "agent: cli\n"
        "---\n"
        "You change the shop's code.\n"
    ),
    "features/shop/viewer.agent.md": (
        "---\n"
        "description: Reads the shop's contexts, binds nothing.\n"
        "contexts: [style, ticket]\n"
        "capabilities: [context:read]\n"
        "agent: cli\n"
        "---\n"
        "You review the shop's code.\n"
    ),
    "features/shop/auditor.agent.md": (
        "---\n"
        "description: Checks the brain and nothing else.\n"
        "contexts: []\n"
        "capabilities: [doctor:read]\n"
        "---\n"
        "You check the brain.\n"
    ),
    "features/shop/style.context.md": (
        "---\nwhen: [always]\n---\nKeep functions small and name them for what they do.\n"
    ),
    "features/shop/ticket.context.md": (
        "---\n"
        "when: [chat, ask]\n"
        "entity: ticket id\n"
        "description: The ticket being worked on, with its status.\n"
        "data: [{ view: shop_ticket, by: ticket_id }]\n"
        "---\n"
        "Work on this ticket only; say so when a change reaches beyond it.\n"
    ),
}

# The first words of each context's instructions: a whole block carries them.
STYLE = "Keep functions small"
TICKET = "Work on this ticket only"
SENT_BEFORE = "(instructions as sent before)"
WITHDRAWN_T1 = '<context-withdrawn name="ticket" entity="T-1"/>'
