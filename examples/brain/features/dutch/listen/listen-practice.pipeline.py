"""Today's listen practice: the coach writes the task, and it is posted to the learner.

The post carries the run's origin, so the learner's answer — a reply to it — brings the
listen context back, and the coach gives feedback there in an ordinary chat turn.
`vars` may name another chat: `{"chat": "tg:user:..."}`.
"""

from keel.code import define_pipeline

# The scenario's own chat (its `chat:`): the learner's chat with the tutor bot.
LEARNER_CHAT = "tg:user:2"


async def run(ctx, vars):
    answer = await ctx.run_agent(
        agent="dutch-coach",
        prompt="Post today's clip link and its three questions. Answer with the post only.",
    )
    await ctx.send(chat=vars.get("chat") or LEARNER_CHAT, text=said(answer))
    return {"posted": True}


def said(answer):
    """The agent's final text: run_agent answers with its turn (or the text alone)."""
    return str(answer.get("text") or "") if isinstance(answer, dict) else str(answer)


pipeline = define_pipeline(run)
