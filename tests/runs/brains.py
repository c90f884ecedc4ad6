"""A small brain whose heartbeats, hooks and scenarios exercise every kind of run step.

- `news/daily` (heartbeat, role `news`): reaches `topic`, whose code half logs each call
  of its `render` to `code-calls.log` in the folder named `brain` it runs under (the brain
  itself, or above the snapshot a run reads), so a test can count them;
- `film/evening` (heartbeat, role `critic`): reaches `rating`, a reply context keyed by
  film id — its post must say which film it is about (`about: {entity}`);
- `desk/ticket-opened` (hook on `ticket.opened`, role `desk`): its gate keys the fire's
  reach to the event's ticket;
- `guard/guarded` and `guard/hasty` (heartbeats): their roles need a person's approval to
  send a message, the first for an hour, the second for a second;
- `guard/announce` (scenario, role `guarded`): a pipeline that sends one line itself, which
  the role's approvals hold like any send;
- `outreach/first-touch` (scenario): a pipeline that asks an agent for a draft, asks for
  approval, sends it keyed and binds the prospect's chat; `outreach/blurt` sends unkeyed,
  which its reach refuses.
"""

from __future__ import annotations

ROLE = """---
description: {description}
contexts: ['*']
capabilities: [context:read, context:bind, message:send]
{extra}---
{persona}
"""

RUNS_BRAIN: dict[str, str] = {
    "constitution/MANIFEST.yaml": "contexts:\n  codeTimeoutMs: 5000\n",
    "features/news/news.agent.md": ROLE.format(
        description="Writes the news.", extra="", persona="You write the news."
    ),
    "features/news/topic.context.md": (
        "---\ndescription: The topic of the day.\nwhen: [run]\n---\nToday's topic is rivers.\n"
    ),
    "features/news/topic.context.py": """
from pathlib import Path

from keel.code import define_context


def render(entity, ctx):
    here = Path(__file__).resolve()
    log = next(p for p in here.parents if p.name == "brain") / "code-calls.log"
    with log.open("a", encoding="utf-8") as out:
        out.write("topic.render\\n")
    return [{"key": "level", "text": "The river is high."}]


context = define_context(render=render)
""",
    "features/news/daily.heartbeat.md": (
        '---\ndescription: The daily news.\nschedule: "0 8 * * *"\nagent: news\n'
        "bot: nova\nchat: tg:chat:news\n---\nWrite today's news in one line.\n"
    ),
    "features/film/critic.agent.md": ROLE.format(
        description="Picks films.", extra="", persona="You pick one film a night."
    ),
    "features/film/rating.context.md": (
        "---\ndescription: The owner's rating of a film.\nwhen: [reply]\nentity: film id\n---\n"
        "Record the owner's rating of this film.\n"
    ),
    "features/film/evening.heartbeat.md": (
        '---\ndescription: Tonight\'s film.\nschedule: "0 19 * * *"\nagent: critic\n'
        "bot: nova\nchat: tg:user:1\n---\nPick tonight's film and post it.\n"
    ),
    "features/desk/desk.agent.md": ROLE.format(
        description="The support desk.", extra="", persona="You run the support desk."
    ),
    "features/desk/ticket.context.md": (
        "---\ndescription: One ticket.\nwhen: [run, reply]\nentity: ticket id\n---\n"
        "Answer about this ticket only.\n"
    ),
    "features/desk/ticket-opened.hook.md": (
        "---\ndescription: A ticket was opened.\nevent: ticket.opened\nagent: desk\n"
        "bot: nova\nchat: tg:chat:desk\n---\nAcknowledge the new ticket in one line.\n"
    ),
    "features/desk/ticket-closed.hook.md": (
        "---\ndescription: A ticket was closed.\nevent: ticket.closed\nagent: desk\n"
        "bot: nova\nchat: tg:chat:desk\nreach: []\nnotice: true\n---\nThank the customer in one line.\n"
    ),
    "features/desk/ticket-opened.hook.py": """
from keel.code import define_gate


def gate(event, ctx):
    return {"entity": event["ticket"]} if event.get("ticket") else None


hook = define_gate(gate)
""",
    "features/guard/guarded.agent.md": ROLE.format(
        description="Asks before it sends.",
        extra='approvals: {"message:send": required, timeout: 1h}\n',
        persona="You post the notice.",
    ),
    "features/guard/hasty.agent.md": ROLE.format(
        description="Asks, briefly, before it sends.",
        extra='approvals: {"message:send": required, timeout: 1s}\n',
        persona="You post the notice.",
    ),
    "features/guard/notice.context.md": (
        "---\ndescription: The notice board.\nwhen: [run]\n---\nNotices are short.\n"
    ),
    "features/guard/guarded.heartbeat.md": (
        '---\ndescription: A guarded notice.\nschedule: "0 9 * * *"\nagent: guarded\n'
        "bot: nova\nchat: tg:chat:board\n---\nPost the notice.\n"
    ),
    "features/guard/hasty.heartbeat.md": (
        '---\ndescription: A hasty notice.\nschedule: "0 9 * * *"\nagent: hasty\n'
        "bot: nova\nchat: tg:chat:board\n---\nPost the notice.\n"
    ),
    "features/guard/announce.scenario.md": (
        "---\ndescription: Announces the lift.\nagent: guarded\nbot: nova\n"
        "chat: tg:chat:board\n---\nAnnounce it.\n"
    ),
    "features/guard/announce.pipeline.py": """
from keel.code import define_pipeline


async def run(ctx, vars):
    await ctx.send(text="The lift is back.")
    return {"sent": True}


pipeline = define_pipeline(run)
""",
    "features/outreach/sdr.agent.md": ROLE.format(
        description="Writes to prospects.", extra="", persona="You write to prospects."
    ),
    "features/outreach/owner.agent.md": ROLE.format(
        description="Runs outreach for the owner.", extra="", persona="You run outreach."
    ),
    "features/outreach/prospect.context.md": (
        "---\ndescription: One prospect's card.\nwhen: [run, reply, chat]\n"
        "entity: prospect id\n---\nWrite to this prospect only.\n"
    ),
    "features/outreach/first-touch.scenario.md": (
        "---\ndescription: The first message to a prospect.\nagent: owner\nbot: nova\n"
        "chat: tg:user:1\nhooks:\n  - event: prospect.replied\n"
        "    prompt: A prospect wrote back; tell the owner in one line.\n"
        "---\nDraft, ask, send, bind.\n"
    ),
    "features/outreach/first-touch.pipeline.py": """
from keel.code import TerminalError, define_pipeline


async def run(ctx, vars):
    prospect, chat = vars.get("prospect"), vars.get("chat")
    if not prospect or not chat:
        raise TerminalError("first-touch needs vars prospect and chat")
    answer = await ctx.run_agent(agent="sdr", entity=prospect, prompt="Draft the first touch.")
    card = await ctx.request_approval(
        chat="tg:user:1", text="Send this? " + answer["text"], about={"entity": prospect}
    )
    if not await ctx.await_approval(card):
        return {"sent": False}
    await ctx.send(chat=chat, text=answer["text"], about={"entity": prospect})
    await ctx.bind_context(context="prospect", entity=prospect, chat=chat)
    return {"sent": True}


pipeline = define_pipeline(run)
""",
    "features/outreach/blurt.scenario.md": (
        "---\ndescription: Says hello to nobody in particular.\nagent: owner\nbot: nova\n"
        "chat: tg:user:1\n---\nSay hello.\n"
    ),
    "features/outreach/blurt.pipeline.py": """
from keel.code import define_pipeline


async def run(ctx, vars):
    await ctx.send(text="Hello!")  # a prospect's reply would come back without its key


pipeline = define_pipeline(run)
""",
}
