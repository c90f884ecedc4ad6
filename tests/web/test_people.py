"""The service's approve routes and the dashboard decide as a named person: with `people:`
in the brain, a person not allowed is refused (409, recorded on the card, which stays
pending) and an approver's decision lets the run go on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import write_files
from tests.web.conftest import ENDED, Hosted, _serving

NOTICE = {"name": "send_message", "arguments": {"text": "The lift is out today."}}
MANIFEST = """people:
  owners: [tg:user:1]
  approvers:
    "message:send": [tg:user:7]
    "*": [owners]
"""


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    folder = tmp_path_factory.mktemp("people")
    files = {**RUNS_BRAIN, "constitution/MANIFEST.yaml": MANIFEST}
    brain = write_files(folder / "brain", files)
    yield from _serving(brain, f"sqlite:///{(folder / 'keel.db').as_posix()}", folder)


def waiting(hosted: Hosted, name: str) -> dict[str, Any]:
    # No closing line: under message:send's policy it would wait on a card of its own.
    model = hosted.script(name, [{"tool_calls": [NOTICE]}, {"text": ""}])
    started = hosted.call("POST", "/v1/runs", {"run": "heartbeat:guarded", "model": model})
    run = hosted.settled(started["id"])
    assert run["status"] == "waiting", run
    return run


def test_the_approve_route_checks_the_person_and_records_a_refusal(hosted: Hosted) -> None:
    run = waiting(hosted, "route")
    card = run["cards"][0]["id"]
    route = f"/v1/approvals/{card}"
    unnamed = hosted.call("POST", route, {"decision": "approve"}, 409)
    assert "names no person" in unnamed["refused"]
    owner = hosted.call("POST", route, {"decision": "approve", "person": "tg:user:1"}, 409)
    assert "tg:user:1 may not decide message:send cards" in owner["refused"]
    pending = hosted.call("GET", "/v1/approvals")["cards"]
    [still] = [c for c in pending if c["id"] == card]
    assert [r["by"] for r in still["refused"]] == [None, "tg:user:1"]
    decided = hosted.call("POST", route, {"decision": "approve", "person": "tg:user:7"})
    assert (decided["status"], decided["decided_by"]) == ("approved", "tg:user:7")
    done = hosted.settled(run["id"], ENDED)
    assert [m["text"] for m in done["messages"]][-1] == "The lift is out today."


def test_the_dashboard_decides_as_the_person_its_form_names(hosted: Hosted) -> None:
    run = waiting(hosted, "dashboard")
    card = run["cards"][0]["id"]
    page = hosted.page(f"/runs/{run['id']}")
    assert 'name="as"' in page
    origin = {"origin": "http://testserver"}
    form = {"decision": "deny", "back": f"/runs/{run['id']}"}
    refused = hosted.client.post(
        f"/runs/cards/{card}", data=form | {"as": "tg:user:5"}, headers=origin
    )
    assert refused.status_code == 409
    assert "tg:user:5 may not decide" in refused.text
    decided = hosted.client.post(
        f"/runs/cards/{card}",
        data=form | {"as": "tg:user:7"},
        headers=origin,
        follow_redirects=False,
    )
    assert decided.status_code == 303, decided.text
    done = hosted.settled(run["id"], ENDED)
    assert (done["cards"][0]["status"], done["cards"][0]["decided_by"]) == ("denied", "tg:user:7")


def test_a_reply_turn_decides_only_as_an_allowed_sender(hosted: Hosted) -> None:
    run = waiting(hosted, "reply")
    card = run["cards"][0]["id"]
    turn = {"bot": "nova", "chat": "tg:chat:board", "reply_to": [card], "input": "yes"}
    refused = hosted.call("POST", "/v1/turns", turn | {"sender": "tg:user:5"}, 409)
    assert "tg:user:5 may not decide message:send cards" in refused["refused"]
    assert hosted.call("GET", f"/v1/runs/{run['id']}")["cards"][0]["status"] == "pending"
    decided = hosted.call("POST", "/v1/turns", turn | {"sender": "tg:user:7"})
    assert decided == {"card": {"id": card, "run_id": run["id"], "status": "approved"}}
    done = hosted.settled(run["id"], ENDED)
    assert done["cards"][0]["decided_by"] == "tg:user:7"
