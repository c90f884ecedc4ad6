"""Runs over HTTP on the real runs engine: the service as `keel serve` builds it, hosting
the worker, on SQLite and on PostgreSQL.

The server's runtime is launched once per module and database (`hosted`, in the
conftest). The server answers with `--model none`; each test names its scripted model in
the body.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine as SAEngine
from sqlalchemy import create_engine

from keel.runs.app import system_database
from keel.runs.records import run_record
from keel.web.dbos_runs import NO_WORKER, NOT_STARTED
from keel.web.service import Service
from keel.web.serving import build_service
from tests.databases import REFUSAL, refusing
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import write_files
from tests.runs.processes import finish, keel
from tests.test_import import loaded_after
from tests.web.conftest import ENDED, Hosted

NOTICE = {"name": "send_message", "arguments": {"text": "The lift is out today."}}


def names(run: dict[str, Any]) -> list[str]:
    return [s["name"] for s in run["steps"]]


def texts(run: dict[str, Any]) -> list[str]:
    return [m["text"] for m in run["messages"]]


def waiting(hosted: Hosted, name: str, closing: str = "Done.") -> dict[str, Any]:
    """A run of `guarded` waiting for a person to approve its notice (`closing`: what the
    model says after it; "" says nothing, so no second card holds a closing line)."""
    model = hosted.script(name, [{"tool_calls": [NOTICE]}, {"text": closing}])
    started = hosted.call("POST", "/v1/runs", {"run": "heartbeat:guarded", "model": model})
    run = hosted.settled(started["id"])
    assert run["status"] == "waiting", run
    return run


def test_the_worker_applies_the_brain_schedules(hosted: Hosted) -> None:
    from dbos import DBOS

    deadline = time.monotonic() + 30
    wanted = {"hb:daily", "hb:evening", "hb:guarded", "hb:hasty"}
    while {s["schedule_name"] for s in DBOS.list_schedules(schedule_name_prefix="hb:")} != wanted:
        assert time.monotonic() < deadline, DBOS.list_schedules(schedule_name_prefix="hb:")
        time.sleep(0.05)
    assert hosted.call("GET", "/healthz")["runs"] is True


def test_a_heartbeat_started_over_http_runs_to_done_with_its_messages(hosted: Hosted) -> None:
    model = hosted.script("daily", [{"text": "Rivers rise today."}])
    started = hosted.call("POST", "/v1/runs", {"run": "heartbeat:daily", "model": model})
    assert (started["run"], started["kind"]) == ("heartbeat:daily", "heartbeat")
    assert started["status"] in ("running", "done")  # it answered after its first step
    run = hosted.settled(started["id"], ENDED)
    assert (run["status"], run["error"], run["refused"]) == ("done", None, False)
    assert names(run) == ["start", "prepare", "request", "send", "finish"]
    assert all(s["status"] == "done" and s["ms"] is not None for s in run["steps"])
    assert (run["role"], run["chat"], run["model"]) == ("news", "tg:chat:news", model)
    [message] = run["messages"]
    assert (message["chat"], message["text"]) == ("tg:chat:news", "Rivers rise today.")
    assert message["origin"]["run"] == "heartbeat:daily"
    assert message["origin"]["reach"] == [{"context": "topic", "entity": None}]
    [turn] = run["turns"]
    assert turn["role"] == "news"
    assert run["usage"]["requests"] == 1
    # What the API answers is what `keel runs BRAIN show ID --json` prints.
    with hosted.service.engine.store.transaction() as tx:
        record = run_record(tx, run["id"])
    assert record is not None
    assert (run["messages"], run["turns"], run["cards"]) == (
        record["messages"], record["turns"], record["cards"],
    )  # fmt: skip
    listed = {r["id"]: r for r in hosted.call("GET", "/v1/runs")["runs"]}
    assert names(listed[run["id"]]) == names(run)
    assert "messages" not in listed[run["id"]]  # a listing does not read them


def test_a_chat_named_in_the_body_replaces_the_runs_own_and_keeps_its_bot(
    hosted: Hosted,
) -> None:
    model = hosted.script("elsewhere", [{"text": "Rivers, elsewhere."}])
    body = {"run": "heartbeat:daily", "model": model, "chat": "tg:chat:elsewhere"}
    run = hosted.settled(hosted.call("POST", "/v1/runs", body)["id"], ENDED)
    assert (run["status"], run["bot"], run["chat"], run["thread"]) == (
        "done", "nova", "tg:chat:elsewhere", None,
    )  # fmt: skip
    assert [(m["bot"], m["chat"]) for m in run["messages"]] == [("nova", "tg:chat:elsewhere")]


def test_the_dashboard_shows_real_runs_with_their_steps_and_messages(hosted: Hosted) -> None:
    model = hosted.script("shown", [{"text": "Shown on the dashboard."}])
    started = hosted.call("POST", "/v1/runs", {"run": "heartbeat:daily", "model": model})
    run = hosted.settled(started["id"], ENDED)
    assert f'href="/runs/{run["id"]}"' in hosted.page("/runs")
    page = hosted.page(f"/runs/{run['id']}")
    assert "Shown on the dashboard." in page
    assert "<strong>finish</strong>" in page
    assert f'href="/turns/{run["turns"][0]["id"]}"' in page
    assert f'href="/runs/{run["id"]}"' in hosted.page("/")  # the system page lists it


def test_an_event_fires_its_hook_keyed_by_its_gate_and_fires_once_per_event_id(
    hosted: Hosted,
) -> None:
    model = hosted.script("ack", [{"text": "Ticket T-7 received."}])
    body = {"payload": {"ticket": "T-7"}, "model": model, "event_id": "evt-7"}
    fired = hosted.call("POST", "/v1/events/ticket.opened", body)
    [started] = fired["runs"]
    assert (fired["event"], started["run"]) == ("ticket.opened", "hook:ticket-opened")
    assert started["id"] == "hook-ticket-opened-evt-7"
    run = hosted.settled(started["id"], ENDED)
    assert run["status"] == "done", run
    assert run["reach"] == [{"context": "ticket", "entity": "T-7"}]
    [message] = run["messages"]
    assert (message["chat"], message["text"]) == ("tg:chat:desk", "Ticket T-7 received.")
    assert message["origin"]["reach"] == [{"context": "ticket", "entity": "T-7"}]
    again = hosted.call("POST", "/v1/events/ticket.opened", body)["runs"]
    assert [(r["id"], r["status"]) for r in again] == [(run["id"], "done")]
    assert texts(hosted.call("GET", f"/v1/runs/{run['id']}")) == ["Ticket T-7 received."]
    nobody = hosted.call("POST", "/v1/events/nobody.listens", {"payload": {"x": 1}}, status=422)
    assert "no hook listens to 'nobody.listens'" in nobody["detail"]


def test_a_run_waiting_on_a_card_finishes_once_the_card_is_approved_over_the_api(
    hosted: Hosted,
) -> None:
    run = waiting(hosted, "approve")
    [card] = run["cards"]
    assert (card["status"], card["tool"], card["risk"]) == ("pending", "send_message", "moderate")
    assert card["id"] in [c["id"] for c in hosted.call("GET", "/v1/approvals")["cards"]]
    body = {"decision": "approve", "by": "ana", "note": "fine"}
    decided = hosted.call("POST", f"/v1/approvals/{card['id']}", body)
    assert (decided["status"], decided["decided_by"], decided["note"]) == (
        "approved",
        "ana",
        "fine",
    )
    done = hosted.settled(run["id"], ENDED)
    assert done["status"] == "done", done
    assert names(done)[-5:] == ["card", "decision", "tool", "request", "finish"]
    assert texts(done)[1:] == ["The lift is out today."]  # after the card's own message
    assert done["cards"][0]["status"] == "approved"
    again = hosted.call("POST", f"/v1/approvals/{card['id']}", {"decision": "deny"}, 409)
    assert again == {"refused": f"card {card['id']} was approved already"}
    assert card["id"] not in [c["id"] for c in hosted.call("GET", "/v1/approvals")["cards"]]


def test_a_yes_replied_to_a_card_in_a_chat_turn_lets_the_hosted_worker_finish_the_run(
    hosted: Hosted,
) -> None:
    run = waiting(hosted, "reply")
    [card] = run["cards"]
    turn = {
        "bot": "nova",
        "chat": "tg:chat:board",
        "role": "guarded",
        "reply_to": [card["id"]],
        "input": "yes, post it",
    }
    answered = hosted.call("POST", "/v1/turns", turn)
    assert answered == {"card": {"id": card["id"], "run_id": run["id"], "status": "approved"}}
    done = hosted.settled(run["id"], ENDED)  # woken by the worker's next look
    assert done["status"] == "done", done
    assert texts(done)[1:] == ["The lift is out today."]


def test_a_card_denied_from_the_dashboard_lets_the_run_end_without_the_call(
    hosted: Hosted,
) -> None:
    run = waiting(hosted, "deny", closing="")
    [card] = run["cards"]
    action = f"/runs/cards/{quote(card['id'], safe='')}"
    assert f'action="{action}"' in hosted.page("/runs")
    decided = hosted.client.post(
        action,
        data={"decision": "deny", "back": f"/runs/{run['id']}"},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert decided.status_code == 303
    done = hosted.settled(run["id"], ENDED)
    assert done["status"] == "done", done
    assert (done["cards"][0]["status"], done["cards"][0]["decided_by"]) == ("denied", "dashboard")
    assert texts(done)[1:] == []  # the notice was never posted


def test_a_run_started_from_the_dashboard_form_is_approved_in_place_and_goes_on(
    hosted: Hosted,
) -> None:
    model = hosted.script("form", [{"tool_calls": [NOTICE]}, {"text": "Done."}])
    host = {"Origin": "http://testserver"}
    started = hosted.client.post(
        "/start",
        data={"run": "heartbeat:guarded", "model": model, "vars": ""},
        headers=host,
        follow_redirects=False,
    )
    assert started.status_code == 303, started.text
    run_id = started.headers["location"].removeprefix("/runs/")
    run = hosted.settled(run_id)
    assert run["status"] == "waiting", run
    [card] = run["cards"]
    decided = hosted.client.post(
        f"/runs/cards/{quote(card['id'], safe='')}",
        data={"decision": "approve", "back": f"/runs/{run_id}"},
        headers=host,
        follow_redirects=False,
    )
    assert decided.status_code == 303
    # The page the person lands on shows the card decided and the run gone on.
    landed = hosted.page(decided.headers["location"])
    facts = landed.split('<p class="facts">', 1)[1].split("</p>", 1)[0]
    assert '<span class="status waiting">' not in facts, facts
    assert '<span class="status approved">approved</span> by dashboard' in landed
    done = hosted.settled(run_id, ENDED)
    assert done["status"] == "done", done


def test_a_yes_tried_from_the_dashboard_in_reply_to_a_card_decides_it(hosted: Hosted) -> None:
    run = waiting(hosted, "tried-yes")
    [card] = run["cards"]
    fields = {
        "bot": "nova",
        "chat": "tg:chat:board",
        "role": "guarded",
        "reply_to": card["id"],
        "text": "yes, post it",
    }
    tried = hosted.client.post(
        "/try", data=fields, headers={"Origin": "http://testserver"}, follow_redirects=False
    )
    assert tried.status_code == 303, tried.text
    assert tried.headers["location"] == (
        f"/runs/{quote(run['id'], safe='')}?decided={quote(card['id'], safe='')}&run={run['id']}"
    )
    landed = hosted.page(tried.headers["location"])
    assert f"Card {card['id']} approved" in landed
    done = hosted.settled(run["id"], ENDED)
    assert done["status"] == "done", done
    assert texts(done)[1:] == ["The lift is out today."]


def test_a_run_the_dashboard_form_cannot_start_is_refused_on_the_form(hosted: Hosted) -> None:
    refused = hosted.client.post(
        "/start",
        data={"run": "heartbeat:no-such-beat", "vars": ""},
        headers={"Origin": "http://testserver"},
    )
    assert refused.status_code in (409, 422), refused.text
    assert 'id="refusal"' in refused.text
    assert "no-such-beat" in refused.text


def test_a_scenario_runs_with_its_vars_and_waits_for_its_approval(hosted: Hosted) -> None:
    model = hosted.script("draft", [{"text": "Hello from Keel."}])
    body = {
        "run": "scenario:first-touch",
        "vars": {"prospect": "p-42", "chat": "tg:user:42"},
        "model": model,
    }
    run = hosted.settled(hosted.call("POST", "/v1/runs", body)["id"])
    assert run["status"] == "waiting", run
    [card] = run["cards"]
    hosted.call("POST", f"/v1/approvals/{card['id']}", {"decision": "approve"})
    done = hosted.settled(run["id"], ENDED)
    assert done["status"] == "done", done
    sent = [m for m in done["messages"] if m["chat"] == "tg:user:42"]
    assert [m["text"] for m in sent] == ["Hello from Keel."]
    assert sent[0]["origin"]["reach"] == [{"context": "prospect", "entity": "p-42"}]
    assert done["cards"][0]["decided_by"] == "keel serve"


def test_a_run_left_waiting_by_a_process_that_ended_is_finished_here(hosted: Hosted) -> None:
    model = hosted.script("left", [{"tool_calls": [NOTICE]}, {"text": "Done."}])
    process = keel("run", str(hosted.brain), "heartbeat:guarded", "--model", model,
                   "--db", hosted.db, "--json")  # fmt: skip
    code, out, err = finish(process)
    assert code == 0, (out, err)
    run = hosted.call("GET", f"/v1/runs/{json.loads(out)['id']}")
    assert (run["run"], run["status"]) == ("heartbeat:guarded", "waiting")
    [card] = run["cards"]
    hosted.call("POST", f"/v1/approvals/{card['id']}", {"decision": "approve"})
    done = hosted.settled(run["id"], ENDED)
    assert done["status"] == "done", done
    assert texts(done)[1:] == ["The lift is out today."]


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        pytest.param({"run": "heartbeat:nope"}, 422, "no heartbeat 'nope'", id="unknown"),
        pytest.param(
            {"run": "heartbeat:daily", "model": "scripted:scripts/no-such.json"},
            422,
            "the scripted model cannot be read",
            id="model-file",
        ),
        pytest.param(
            {"run": "heartbeat:daily", "model": "scripted:/no/such.json"},
            422,
            "outside the brain",
            id="model-elsewhere",
        ),
        pytest.param(
            {"run": "heartbeat:daily", "model": "gpt"}, 422, "not a model spec", id="spec"
        ),
        pytest.param({"run": "hook:ticket-opened"}, 422, "/v1/events/", id="hook"),
        pytest.param(
            {"run": "heartbeat:daily", "reach": [{"context": "nope"}]},
            422,
            "the reach names 'nope'",
            id="reach",
        ),
    ],
)
def test_what_cannot_start_says_why(
    hosted: Hosted, body: dict[str, Any], status: int, said: str
) -> None:
    detail = hosted.call("POST", "/v1/runs", body, status)["detail"]
    assert said in detail
    assert str(hosted.brain.resolve()) not in detail, "the server's own paths stay its own"


def test_an_unknown_run_or_card_is_404(hosted: Hosted) -> None:
    assert "no run 'no-such'" in hosted.call("GET", "/v1/runs/no-such", status=404)["detail"]
    missing = hosted.call("POST", "/v1/approvals/no-such", {"decision": "deny"}, 404)
    assert "no approval card 'no-such'" in missing["detail"]


# -- a run is answered only once it is recorded ------------------------------------------

MARK = "refuse-to-record"


@contextmanager
def journal(hosted: Hosted) -> Iterator[tuple[SAEngine, str]]:
    """DBOS's journal of the hosted worker, and its table of workflows."""
    target = system_database(hosted.db)
    if target.schema:  # PostgreSQL: a schema beside Keel's, in the same database
        yield hosted.service.engine.store.engine, f'"{target.schema}".workflow_status'
        return
    db = create_engine(target.url)  # SQLite: a file beside Keel's
    try:
        yield db, "workflow_status"
    finally:
        db.dispose()


def fire(hosted: Hosted, event_id: str, **payload: str) -> Any:
    body = {"payload": {"ticket": "T-8", **payload}, "model": "none", "event_id": event_id}
    return hosted.client.post("/v1/events/ticket.opened", json=body)


def test_a_run_the_database_will_not_record_is_not_answered_as_started(hosted: Hosted) -> None:
    from dbos import DBOS

    keel_db = hosted.service.engine.store.engine
    with refusing(keel_db, "keel_runs", ("INSERT",), f"NEW.\"order\" LIKE '%{MARK}%'"):
        answer = fire(hosted, "evt-unrecorded", note=MARK)
    assert answer.status_code == 503, answer.text
    assert REFUSAL in answer.json()["detail"]
    run_id = "hook-ticket-opened-evt-unrecorded"
    hosted.call("GET", f"/v1/runs/{run_id}", status=404)
    assert DBOS.get_workflow_status(run_id) is None  # nothing runs it behind the caller's back
    again = fire(hosted, "evt-unrecorded", note=MARK)  # the database takes it now
    assert hosted.settled(again.json()["runs"][0]["id"], ENDED)["status"] == "done"


def test_a_run_whose_start_the_database_will_not_record_is_answered_failed(
    hosted: Hosted,
) -> None:
    keel_db = hosted.service.engine.store.engine
    # A run that asks no model writes its row once, as done, in its turn's commit: refuse
    # that row (and a running one), never the failed one that answers the refusal.
    when = f"NEW.status IN ('running', 'done') AND NEW.\"order\" LIKE '%{MARK}%'"
    with refusing(keel_db, "keel_runs", ("INSERT", "UPDATE"), when):
        answer = fire(hosted, "evt-unstarted", note=MARK)
        assert answer.status_code == 200, answer.text
        [started] = answer.json()["runs"]
        assert (started["status"], started["id"]) == ("failed", "hook-ticket-opened-evt-unstarted")
        assert REFUSAL in started["error"]
        run = hosted.call("GET", f"/v1/runs/{started['id']}")
    assert (run["status"], run["error"]) == ("failed", started["error"])


def test_a_run_whose_workflow_dbos_will_not_journal_is_answered_failed(hosted: Hosted) -> None:
    run_id = "hook-ticket-opened-evt-unjournaled"
    with (
        journal(hosted) as (db, table),
        refusing(db, table, ("INSERT",), f"NEW.workflow_uuid = '{run_id}'"),
    ):
        answer = fire(hosted, "evt-unjournaled")
    assert answer.status_code == 200, answer.text
    [started] = answer.json()["runs"]
    assert (started["id"], started["status"]) == (run_id, "failed")
    assert REFUSAL in started["error"]
    assert hosted.call("GET", f"/v1/runs/{run_id}")["status"] == "failed"


# -- servers without the worker (no DBOS launched) ------------------------------------------


def test_serving_loads_dbos_only_when_the_worker_starts() -> None:
    modules = "keel.web.app, keel.web.serving, keel.web.dbos_runs, keel.cli.serve_cmd"
    assert "dbos" not in loaded_after(f"import keel, {modules}")


def _unhosted(tmp_path: Path, db: str, *, worker: bool) -> tuple[Service, TestClient]:
    brain = write_files(tmp_path / "brain", RUNS_BRAIN)
    svc, app = build_service(brain, db, seed=False, worker=worker, env={})
    return svc, TestClient(app)


@pytest.mark.parametrize(
    ("db", "worker", "said"),
    [
        pytest.param("sqlite://", True, "is in memory", id="memory"),
        pytest.param(None, False, NO_WORKER, id="no-worker"),
    ],
)
def test_a_server_without_a_worker_answers_501_and_says_why(
    tmp_path: Path, db: str | None, worker: bool, said: str
) -> None:
    svc, client = _unhosted(tmp_path, db or f"sqlite:///{tmp_path / 'k.db'}", worker=worker)
    with client:
        answer = client.post("/v1/runs", json={"run": "heartbeat:daily"})
        assert answer.status_code == 501
        assert said in answer.json()["detail"]
        assert client.get("/healthz").json()["runs"] is False
        assert said in client.get("/runs").text
    svc.engine.close()


def test_runs_started_before_the_worker_is_are_503(tmp_path: Path) -> None:
    svc, client = _unhosted(tmp_path, f"sqlite:///{tmp_path / 'k.db'}", worker=True)
    # Not entered: the lifespan that starts the worker has not run.
    answer = client.post("/v1/runs", json={"run": "heartbeat:daily"})
    assert (answer.status_code, answer.json()["detail"]) == (503, NOT_STARTED)
    assert client.get("/v1/runs").json() == {"runs": []}  # reading needs no worker
    svc.engine.close()
