"""A scenario's pipeline in a run: `async def run(ctx, vars)`, each ctx call a durable step.

The pipeline runs in a brain-code worker (`CodeRunner.run_pipeline`); each of its ctx calls
comes back here, in the workflow's thread, and is carried out as the run's next step:

- `run_agent(agent=, prompt=, entity=?, reach=?)` — one agent turn as `agent`, its input
  the prompt; `entity` keys the scenario's reach like a gate's entity, `reach` replaces it
  for this step; what the agent sends carries the step's reach. Answers `{"text", "turn"}`.
- `bind_context(context=, entity=?, chat=?, thread=?, bot=?)` / `unbind_context(...)` — the
  `context_bind` / `context_unbind` tools as the scenario's role, in the run's chat unless
  named. Answers what the tool says.
- `send(chat=?, text=, about=?, thread=?)` — a message with the run's origin (`about:
  {entity}` or `{context}` as for `send_message`). Answers `{"message_id"}`.
- `open_topic(chat=?, title=)` — a forum topic recorded for the chat surface to open
  (`keel.tools.topic_open`), under a thread id named after the step. Answers the id.
- `request_approval(chat=?, text=)` — a card: answers its id at once;
  `await_approval(card)` waits for the decision (or its timeout) and answers true or false.

A replay runs the pipeline again from the start; its calls are answered from the journal
(nothing is carried out twice), which is why a pipeline must be deterministic apart from
its ctx calls. A call Keel refuses raises `CallFailed` in the pipeline; `TerminalError`
(raised by the pipeline, or uncaught) fails the run; so does any other failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from keel.brain.specs import ReachEntry
from keel.code.pipelines import PipelineCall
from keel.errors import KeelError, Refused, UsageError
from keel.link.reach import find_run, run_reach
from keel.link.values import Conversation, TurnRequest
from keel.runs.agent import RunFailed, agent_turn, send, unsent
from keel.runs.approvals import approval_card, held_send, wait
from keel.runs.context import NoModel, RunContext
from keel.runs.journal import Done, durable, nothing, once
from keel.store import Tx
from keel.tools.binding import bind_context, unbind_context, where
from keel.tools.topic_open import open_topic, topic_thread

Handler = Callable[[RunContext, Mapping[str, Any]], Any]


def has_pipeline(context: RunContext) -> bool:
    """Whether the run's scenario has a `<id>.pipeline.py`."""
    plan = context.planned
    entity = context.brain.entity(plan.ref.kind, plan.ref.id)
    return entity is not None and entity.code_path is not None


def run_scenario(context: RunContext) -> Any:
    """Run the scenario's pipeline to its end; `RunFailed` with its failure."""
    plan = context.planned
    brain = context.brain  # once: the pipeline's entity and its runner read one snapshot
    entity = find_run(brain, plan.ref)
    if entity.code_path is None:
        raise UsageError(f"{entity.key} has no pipeline ({entity.id}.pipeline.py)")
    call = PipelineCall(
        scenario=entity.id,
        path=entity.code_path,
        vars=dict(context.order.vars),
        run_id=context.run_id,
        started_at=datetime.fromisoformat(context.order.at),
    )

    last_refused = [False]  # whether the latest ctx call was refused
    no_model: list[NoModel] = []  # a call that needed the model this run does not have

    def on_call(name: str, args: Mapping[str, Any]) -> Any:
        handler = HANDLERS.get(name)
        if handler is None:
            raise UsageError(f"a pipeline has no ctx.{name}")
        last_refused[0] = False
        try:
            return handler(context, args)
        except (Refused, RunFailed) as exc:
            last_refused[0] = isinstance(exc, Refused) or exc.refused
            raise
        except NoModel as exc:
            no_model.append(exc)
            raise

    answer = context.engine.runner_for(brain).run_pipeline(call, on_call)
    if answer.failure is not None and no_model:
        # Not the code's fault: the run was started without the model its pipeline asks.
        raise RunFailed(f"the pipeline of {entity.key} asked the model: {no_model[0]}")
    if answer.failure is not None:
        # A refusal the pipeline let through is the run's refusal, as an agent's would be.
        refused = (
            last_refused[0]
            and answer.failure.kind == "raise"
            and "raised CallFailed" in answer.failure.reason
        )
        raise RunFailed(f"the pipeline of {entity.key} failed: {answer.failure}", refused=refused)
    return answer.value


def _run_agent(context: RunContext, args: Mapping[str, Any]) -> Any:
    plan = context.planned
    agent = args.get("agent")
    prompt = args.get("prompt")
    if not isinstance(agent, str) or not isinstance(prompt, str):
        raise UsageError("run_agent takes agent= and prompt= (text)")
    reach = _step_reach(context, args.get("reach"), args.get("entity"))
    request = TurnRequest(
        conversation=plan.conversation,
        now=datetime.fromisoformat(context.order.at),
        role=agent,
        run=plan.ref,
        reach=reach,
        input=prompt,
    )
    outcome = agent_turn(context, request, send_answer=False)
    return {"text": outcome.reply, "turn": outcome.prepared.id}


def _step_reach(context: RunContext, given: Any, entity: Any) -> tuple[ReachEntry, ...]:
    """The step's reach: `reach` replaces the run's, `entity` keys its one keyed context."""
    brain = context.brain
    spec = find_run(brain, context.planned.ref)
    override: tuple[ReachEntry, ...] | None = None
    if given is not None:
        if not isinstance(given, list) or not all(
            isinstance(e, dict) and isinstance(e.get("context"), str) for e in given
        ):
            raise UsageError("run_agent's reach is a list of {context, entity?}")
        override = tuple(ReachEntry(context=e["context"], entity=e.get("entity")) for e in given)
    if entity is not None and not isinstance(entity, str):
        raise UsageError("run_agent's entity is a key (text)")
    if override is None and entity is None:
        return context.planned.reach
    return run_reach(brain, spec, override=override, key=entity)


def _place(context: RunContext, args: Mapping[str, Any]) -> Conversation:
    here = context.planned.conversation
    chat = args.get("chat") or here.chat
    thread = args.get("thread") if chat != here.chat or "thread" in args else here.thread
    return Conversation(bot=args.get("bot") or here.bot, chat=chat, thread=thread)


def _bind(context: RunContext, args: Mapping[str, Any]) -> Any:
    return _binding(context, args, bind=True)


def _unbind(context: RunContext, args: Mapping[str, Any]) -> Any:
    return _binding(context, args, bind=False)


def _binding(context: RunContext, args: Mapping[str, Any], *, bind: bool) -> Any:
    plan = context.planned
    seq = context.next_seq()
    name = "bind" if bind else "unbind"
    place = _place(context, args)
    ident = args.get("context")
    if not isinstance(ident, str):
        raise UsageError(f"{name}_context takes context= (a context id)")
    bot = args.get("bot")

    def write(tx: Tx, _: None) -> Done:
        brain = context.brain
        try:
            if bind:
                bind_context(
                    brain,
                    tx,
                    brain.roles[plan.role],
                    context=ident,
                    entity=args.get("entity"),
                    chat=place.chat,
                    thread=place.thread,
                    bot=bot,
                )
                said = f"bound {ident} in {where(place.chat, place.thread)}"
            else:
                unbind_context(
                    brain, tx, context=ident, chat=place.chat, thread=place.thread, bot=bot
                )
                said = f"unbound {ident} in {where(place.chat, place.thread)}"
        except KeelError as exc:
            return Done(output={"refused": str(exc)}, detail=f"refused: {exc}", status="failed")
        return Done(output={"said": said}, detail=said)

    data = durable(name, lambda: once(context.store, context.run_id, seq, name, nothing, write))
    if "refused" in data:
        raise RunFailed(data["refused"], refused=True)
    return data["said"]


def _send(context: RunContext, args: Mapping[str, Any]) -> Any:
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise UsageError("send takes text= (some text)")
    about = args.get("about") or {}
    if not isinstance(about, dict):
        raise UsageError("send's about is {entity} or {context}")
    place = _place(context, args)
    verdict = held_send(
        context,
        text,
        tool="send",
        conversation=place,
        about_entity=about.get("entity"),
        about_context=about.get("context"),
    )
    if verdict is not None and not verdict.approved:
        unsent(context, text, verdict.said)
        raise Refused(f"not sent: {verdict.said}")
    message = send(
        context,
        text,
        conversation=place,
        about_entity=about.get("entity"),
        about_context=about.get("context"),
    )
    return {"message_id": message["message_id"]}


def _open_topic(context: RunContext, args: Mapping[str, Any]) -> Any:
    title = args.get("title")
    if not isinstance(title, str):
        raise UsageError("open_topic takes title= (the topic's name)")
    seq = context.next_seq()
    place = _place(context, {"chat": args.get("chat")})
    thread = topic_thread(context.message_id(seq))

    def write(tx: Tx, _: None) -> Done:
        try:
            topic = open_topic(tx, bot=place.bot, chat=place.chat, title=title, thread=thread)
        except KeelError as exc:
            return Done(output={"refused": str(exc)}, detail=f"refused: {exc}", status="failed")
        said = f"opened topic {topic.thread} in {topic.chat}"
        return Done(output={"thread": topic.thread}, detail=said)

    data = durable(
        "topic", lambda: once(context.store, context.run_id, seq, "topic", nothing, write)
    )
    if "refused" in data:
        raise RunFailed(data["refused"], refused=True)
    return data["thread"]


def _request_approval(context: RunContext, args: Mapping[str, Any]) -> Any:
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise UsageError("request_approval takes text= (what the person is asked)")
    about = args.get("about") or {}
    if not isinstance(about, dict):
        raise UsageError("request_approval's about is {entity} or {context}")
    card = approval_card(context, text, conversation=_place(context, args), about=about)
    return card.id


def _await_approval(context: RunContext, args: Mapping[str, Any]) -> Any:
    card_id = args.get("card")
    if not isinstance(card_id, str):
        raise UsageError("await_approval takes card= (the id request_approval answered)")
    with context.store.transaction() as tx:
        found = tx.card(card_id)
    if found is None or found.run_id != context.run_id:
        raise UsageError(f"no approval card {card_id!r} in this run")
    return wait(context, found).approved


HANDLERS: dict[str, Handler] = {
    "run_agent": _run_agent,
    "bind_context": _bind,
    "unbind_context": _unbind,
    "send": _send,
    "open_topic": _open_topic,
    "request_approval": _request_approval,
    "await_approval": _await_approval,
}
