"""The first touch of one prospect: draft, the owner's approval, send, then bind the chat.

`keel scenario BRAIN first-touch --vars '{"prospect": "p_913", "chat": "tg:user:5513001"}'`.
The drafting step names the prospect, so its run link carries that prospect's card (the
`prospect` context filtered to its key); the approved draft goes out keyed to the same
prospect, so the owner's reply to it brings the card back. Only then is the prospect's
chat bound to them: every later turn there carries their card, no link needed.
"""

from keel.code import TerminalError, define_pipeline

# The scenario's own chat (its `chat:`): the owner, who approves each first message.
OWNER_CHAT = "tg:user:1"


async def run(ctx, vars):
    prospect, chat = vars.get("prospect"), vars.get("chat")
    if not prospect or not chat:
        raise TerminalError("first-touch needs vars {prospect: <prospect id>, chat: <their chat>}")
    answer = await ctx.run_agent(
        agent="sdr",
        entity=prospect,
        prompt=(
            "Write the first message to this prospect: at most five sentences, one concrete "
            "thing from their card, no meeting request. Answer with the message only."
        ),
    )
    draft = said(answer)
    card = await ctx.request_approval(
        chat=OWNER_CHAT,
        text=f"First message to {prospect}, to send as written:\n\n{draft}",
        about={"entity": prospect},  # the owner's reply to the card is about this prospect
    )
    if not await ctx.await_approval(card):
        return {"sent": False, "prospect": prospect}
    await ctx.send(chat=chat, text=draft, about={"entity": prospect})
    await ctx.bind_context(context="prospect", entity=prospect, chat=chat)
    return {"sent": True, "prospect": prospect}


def said(answer):
    """The agent's final text: run_agent answers with its turn (or the text alone)."""
    return str(answer.get("text") or "") if isinstance(answer, dict) else str(answer)


pipeline = define_pipeline(run)
