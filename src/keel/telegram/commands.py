"""The chat's own commands: `/context` and `/help`, answered by Keel, never by the model.

`/context` is `keel context` for the conversation it is said in: what the latest turn
carried (each context attached with its link and size, or stubbed with the knob that
stubbed it), how full the window was, and the links kept for the next turns. `/help`
says what the bot is and what it answers. A command names the bot or not
(`/context@desk_bot`); any other command is a message like the others.
"""

from __future__ import annotations

from keel.ledger import ChatContext

COMMANDS = ("/context", "/help")


def command_of(text: str) -> str | None:
    """The Keel command `text` is (`/context`, `/help`), or None."""
    word = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    name = word.split("@", 1)[0].casefold()
    return name if name in COMMANDS else None


def context_text(found: ChatContext | None) -> str:
    """`/context` as a chat message."""
    if found is None:
        return "No turn has been recorded here yet."
    journal = found.journal
    lines = [f"Turn {journal.turn}, as {journal.role}:"]
    for decision in journal.decisions:
        link = decision.link
        name = link.context + (f"={link.entity}" if link.entity else "")
        how = f"{link.kind} link" + (f", {link.kept}" if link.kept is not None else "")
        if decision.attached:
            lines.append(f"• {name}: attached ({how}, {decision.chars:,} chars)")
        else:
            lines.append(f"• {name}: stubbed by {decision.knob} ({how})")
    if not journal.decisions:
        lines.append("• no context")
    if found.window is not None:
        window = found.window
        lines.append(f"Window: {window.used:,} of {window.allocation:,} tokens used.")
    for kept in found.kept:
        held = kept.link
        name = held.context + (f"={held.entity}" if held.entity else "")
        lines.append(f"Kept: {name} ({held.kind}, {kept.turns_left} more turn(s))")
    return "\n".join(lines)


def help_text(bot: str, role: str | None) -> str:
    """`/help` as a chat message."""
    as_role = f" (as {role})" if role else ""
    return "\n".join(
        [
            f"I am {bot}{as_role}, answering with what this chat is about.",
            "In a group, mention me, reply to one of my messages or start with a command; "
            "in a direct message, just write.",
            "Reply to a message of mine to go on from it. Reply yes or no to an approval "
            "card, or press its buttons, to decide it.",
            "/context — what my last answer here was given to read.",
            "/help — this message.",
        ]
    )
