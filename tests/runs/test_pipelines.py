"""A scenario's pipeline in a run (`keel.runs.pipelines`): a binding made and undone as
steps, a call Keel refuses seen by the pipeline as `CallFailed`, and each ctx call that
reaches the run with arguments the pipeline's ctx would never send — the worker runs brain
code, so the run checks again what it is asked — refused with what to pass instead."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from keel.errors import UsageError
from keel.link.values import RunRef
from keel.runs.context import RunContext
from keel.runs.pipelines import HANDLERS, run_scenario
from keel.runs.plan import plan_run
from keel.runs.service import order_for
from keel.tools.topic_open import topic_thread
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of

FILES = {
    **RUNS_BRAIN,
    "features/desk/rebind.scenario.md": (
        "---\ndescription: Binds the desk to a ticket and lets it go.\nagent: desk\nbot: nova\n"
        "chat: tg:chat:rebind\n---\nRebind.\n"
    ),
    "features/desk/rebind.pipeline.py": """
from keel.code import CallFailed, define_pipeline


async def run(ctx, vars):
    said = [await ctx.bind_context(context="ticket", entity=vars["ticket"])]
    said.append(await ctx.unbind_context(context="ticket"))
    for attempt in (
        lambda: ctx.bind_context(context="nowhere", entity="x"),
        lambda: ctx.await_approval("card-of-nobody"),
    ):
        try:
            await attempt()
        except CallFailed as exc:
            said.append(f"refused: {exc}")
    return {"said": said}


pipeline = define_pipeline(run)
""",
    "features/desk/topic.scenario.md": (
        "---\ndescription: Opens a ticket's topic.\nagent: desk\nbot: nova\n"
        "chat: tg:chat:-1007\n---\nOpen.\n"
    ),
    "features/desk/topic.pipeline.py": """
from keel.code import define_pipeline


async def run(ctx, vars):
    thread = await ctx.open_topic(title=vars["ticket"] + " · lamp")
    await ctx.bind_context(context="ticket", entity=vars["ticket"], thread=thread)
    sent = await ctx.send(text="This topic is yours.", thread=thread, about={"entity": vars["ticket"]})
    return {"thread": thread, "sent": sent["message_id"]}


pipeline = define_pipeline(run)
""",
    "features/desk/plain.scenario.md": (
        "---\ndescription: No pipeline.\nagent: desk\nbot: nova\nchat: tg:chat:plain\n---\nHi.\n"
    ),
}
runs = runs_of(FILES, "pipelines")


def test_a_pipeline_that_asks_the_model_of_a_run_without_one_says_to_give_it_one(
    runs: Runs,
) -> None:
    vars_ = json.dumps({"prospect": "p-1", "chat": "tg:user:9"})
    record = runs.json("scenario", "first-touch", "--vars", vars_, "--model", "none", exit_code=1)
    assert record["status"] == "failed"
    assert "asked the model: this run has no model (--model none)" in record["error"]
    assert "start it with a model" in record["error"]
    assert "fix the code" not in record["error"]  # the code is not what is wrong


def test_a_pipeline_binds_unbinds_and_sees_what_keel_refuses_as_call_failed(runs: Runs) -> None:
    vars_ = json.dumps({"ticket": "T-7"})
    record = runs.json("scenario", "rebind", "--vars", vars_, "--model", "none")
    assert record["status"] == "done"
    assert [(s["name"], s["status"]) for s in record["steps"]] == [
        ("start", "done"), ("bind", "done"), ("unbind", "done"), ("bind", "failed"),
        ("finish", "done"),
    ]  # fmt: skip
    assert runs.engine.bindings("tg:chat:rebind") == ()
    with runs.engine.store.transaction() as tx:
        finish = tx.steps(record["id"])[-1]
    said = finish.output["result"]["said"]
    assert said[:2] == ["bound ticket in tg:chat:rebind", "unbound ticket in tg:chat:rebind"]
    assert said[2:] == [
        "refused: no context 'nowhere' in this brain — expected one of: notice, prospect, "
        "rating, ticket, topic",
        "refused: no approval card 'card-of-nobody' in this run",
    ]


def test_a_pipeline_opens_a_topic_and_has_its_thread_at_once(runs: Runs) -> None:
    record = runs.json("scenario", "topic", "--vars", '{"ticket": "T-9"}', "--model", "none")
    assert record["status"] == "done", record
    assert [s["name"] for s in record["steps"]] == ["start", "topic", "bind", "send", "finish"]
    with runs.engine.store.transaction() as tx:
        result = tx.steps(record["id"])[-1].output["result"]
        thread = result["thread"]
        # Named after its step: the same thread on every replay of the run.
        assert thread == topic_thread(f"{record['id']}:2")
        topic = tx.topic("nova", "tg:chat:-1007", thread)
    assert topic is not None
    assert (topic.title, topic.state, topic.surface_thread_id) == ("T-9 · lamp", "pending", None)
    [bound] = runs.engine.bindings("tg:chat:-1007")
    assert (bound.context, bound.entity, bound.thread) == ("ticket", "T-9", thread)
    [message] = record["messages"]
    assert (message["thread"], message["message_id"]) == (thread, result["sent"])


def a_context(runs: Runs, scenario: str) -> RunContext:
    order = order_for(runs.engine.brain, RunRef(kind="scenario", id=scenario), model="none")
    return RunContext(runtime=runs.runtime, order=order, plan=plan_run(runs.runtime, order))


def test_a_scenario_without_a_pipeline_has_none_to_run(runs: Runs) -> None:
    with pytest.raises(UsageError, match=r"scenario:plain has no pipeline \(plain\.pipeline\.py\)"):
        run_scenario(a_context(runs, "plain"))


@pytest.mark.parametrize(
    ("call", "args", "said"),
    [
        pytest.param(
            "run_agent", {"agent": 1, "prompt": "p"}, "run_agent takes agent= and prompt=",
            id="agent-not-text",
        ),
        pytest.param(
            "run_agent", {"agent": "desk", "prompt": "p", "reach": "ticket"},
            "run_agent's reach is a list of {context, entity?}", id="reach-not-a-list",
        ),
        pytest.param(
            "run_agent", {"agent": "desk", "prompt": "p", "reach": [{"entity": "T-1"}]},
            "run_agent's reach is a list of {context, entity?}", id="reach-without-context",
        ),
        pytest.param(
            "run_agent", {"agent": "desk", "prompt": "p", "entity": 7},
            "run_agent's entity is a key (text)", id="entity-not-text",
        ),
        pytest.param(
            "bind_context", {"entity": "T-1"}, "bind_context takes context= (a context id)",
            id="bind-without-context",
        ),
        pytest.param(
            "unbind_context", {"context": 3}, "unbind_context takes context= (a context id)",
            id="unbind-context-not-text",
        ),
        pytest.param("send", {"text": "  "}, "send takes text= (some text)", id="send-blank"),
        pytest.param(
            "send", {"text": "Hi.", "about": "T-1"}, "send's about is {entity} or {context}",
            id="send-about-not-a-mapping",
        ),
        pytest.param(
            "request_approval", {"text": None}, "request_approval takes text=",
            id="approval-without-text",
        ),
        pytest.param(
            "request_approval", {"text": "Ok?", "about": ["T-1"]},
            "request_approval's about is {entity} or {context}", id="approval-about-a-list",
        ),
        pytest.param(
            "await_approval", {"card": 5}, "await_approval takes card=", id="card-not-text"
        ),
        pytest.param(
            "open_topic", {"title": None}, "open_topic takes title=", id="topic-without-title"
        ),
    ],
)  # fmt: skip
def test_a_call_the_pipelines_ctx_would_not_send_is_refused_before_any_step(
    runs: Runs, call: str, args: dict[str, Any], said: str
) -> None:
    context = a_context(runs, "rebind")
    with pytest.raises(UsageError, match=re.escape(said)):
        HANDLERS[call](context, args)
    with runs.engine.store.transaction() as tx:
        assert tx.steps(context.run_id) == ()
        assert tx.run(context.run_id) is None
