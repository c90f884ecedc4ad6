"""The `/v1` routes over turns, chats and reports, on SQLite and PostgreSQL.

Every route is driven through the framework's test client against a copy of the reference
brain, with the worked examples' turns: what each answers, and each way it refuses (409),
rejects a body (422 naming the field) or finds nothing (404).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.runtime.driver import AT, Keel
from tests.web.conftest import Served, wait_for

ACME = "tg:chat:-1002000000101"
FORUM = "tg:chat:-1003000000001"
OWNER = "tg:user:1"
OWNER_DM = {"bot": "nova", "chat": OWNER, "dm": True}
FILM = "heartbeat:evening-film"
INCEPTION = "tt1375666"


def post(served: Served, path: str, body: dict[str, Any], status: int = 200) -> Any:
    answer = served.client.post(path, json=body)
    assert answer.status_code == status, (answer.status_code, answer.text)
    return answer.json()


def get(served: Served, path: str, status: int = 200, **params: Any) -> Any:
    answer = served.client.get(path, params=params)
    assert answer.status_code == status, (answer.status_code, answer.text)
    return answer.json()


def pairs(turn: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(a["context"], a["entity"], a["link"]) for a in turn["attached"]]


def test_healthz_says_what_the_server_serves(served: Served) -> None:
    assert get(served, "/healthz") == {
        "ok": True,
        "brain": "reference",
        "skipped_files": 0,
        "model": "none",
        "runs": True,
    }


def test_a_dry_run_answers_what_keel_turn_prints(served: Served) -> None:
    flags = ["--bot", "nova", "--chat", ACME, "--input", "hi", "--open", "client=globex"]
    printed = Keel(brain=served.brain, db=served.url).json("turn", *flags, "--dry-run")
    body = {
        "bot": "nova",
        "chat": ACME,
        "input": "hi",
        "open": [{"context": "client", "entity": "globex"}],
        "at": AT,
        "dry_run": True,
    }
    assert post(served, "/v1/turns", body) == printed
    assert get(served, "/v1/turns")["turns"] == []


def test_a_turn_is_recorded_with_its_id_and_its_sections_text(served: Served) -> None:
    body = {"bot": "nova", "chat": ACME, "input": "When does our retainer renew?", "at": AT}
    turn = post(served, "/v1/turns", body)
    assert pairs(turn) == [("client", "acme", "chat")]
    assert turn["id"] >= 1
    assert turn["dry_run"] is False
    recorded = get(served, f"/v1/turns/{turn['id']}")
    assert recorded["id"] == turn["id"]
    assert recorded["contexts"][0] | {"chars": None} == {
        "context": "client",
        "entity": "acme",
        "link": "chat",
        "kept": None,
        "status": "attached",
        "chars": None,
        "knob": None,
    }
    sent = {s["id"]: s for s in turn["sections"]}
    kept = {s["id"]: s for s in recorded["sections"]}
    assert list(kept) == list(sent)
    for ident, section in kept.items():
        assert section["used_tokens"] == sent[ident]["used_tokens"]
        assert section["text"] == sent[ident]["text"], ident
    assert "Acme Corporation" in kept["context.client@acme"]["text"]
    assert get(served, "/v1/turns", chat=ACME)["turns"][0]["id"] == turn["id"]


def test_the_history_a_turn_showed_is_read_back_with_it(served: Served) -> None:
    first = {"bot": "nova", "chat": ACME, "input": "first question", "at": AT}
    post(served, "/v1/turns", first)
    post(served, "/v1/send", {"bot": "nova", "chat": ACME, "text": "first answer", "at": AT})
    second = post(served, "/v1/turns", first | {"input": "second question"})
    recorded = get(served, f"/v1/turns/{second['id']}")
    assert recorded["history"] == [
        {"role": "user", "text": "first question"},
        {"role": "assistant", "text": "first answer"},
    ]
    assert [m["text"] for m in get(served, "/v1/history", chat=ACME)["messages"]] == [
        "first question",
        "first answer",
        "second question",
    ]


def test_a_format_adds_the_provider_request(served: Served) -> None:
    body = {"bot": "nova", "chat": ACME, "input": "hi", "format": "anthropic", "dry_run": True}
    answer = post(served, "/v1/turns", body)
    assert answer["request"]["messages"][-1]["role"] == "user"
    assert answer["request"]["system"]


def test_a_reply_to_the_film_post_carries_its_rating(served: Served) -> None:
    send = {"bot": "nova", "chat": OWNER, "text": "Tonight: Inception", "run": FILM}
    refused = post(served, "/v1/send", send | {"message_id": "film-0"}, 409)
    assert '"rating" (keyed by film id)' in refused["refused"]
    # The refused post recorded nothing: a reply to it links nothing.
    assert pairs(post(served, "/v1/turns", OWNER_DM | {"reply_to": ["film-0"]})) == []
    sent = post(served, "/v1/send", send | {"message_id": "film-1", "about_entity": INCEPTION})
    assert sent["origin"] == {
        "feature": "coach",
        "reach": [{"context": "pick", "entity": None}, {"context": "rating", "entity": INCEPTION}],
    }
    reply = post(served, "/v1/turns", OWNER_DM | {"reply_to": ["film-1"], "input": "8/10"})
    assert pairs(reply) == [("rating", INCEPTION, "reply")]


def test_a_run_that_keys_a_schedule_is_refused(served: Served) -> None:
    body = {"bot": "nova", "chat": OWNER, "role": "coach", "run": FILM, "entity": "x"}
    answer = post(served, "/v1/turns", body, 409)
    assert "is a schedule, not one entity" in answer["refused"]


def test_bind_then_unbind_a_ticket_to_its_topic(served: Served) -> None:
    here = {"chat": FORUM, "thread": "77", "role": "support"}
    bound = post(served, "/v1/bind", here | {"context": "ticket", "entity": "T-481"})
    assert bound["bound"] == {
        "context": "ticket",
        "entity": "T-481",
        "chat": FORUM,
        "thread": "77",
        "bot": None,
    }
    topic = {"bot": "desk", "chat": FORUM, "thread": "77"}
    assert pairs(post(served, "/v1/turns", topic)) == [("ticket", "T-481", "chat")]
    assert {"context": "ticket", "entity": "T-481", "chat": FORUM, "thread": "77"}.items() <= (
        get(served, "/v1/bindings", chat=FORUM)["bindings"][-1].items()
    )
    unbound = post(served, "/v1/unbind", here | {"context": "ticket"})
    assert unbound["unbound"] == {"context": "ticket", "chat": FORUM, "thread": "77", "bot": None}
    assert pairs(post(served, "/v1/turns", topic)) == []


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        pytest.param(
            "/v1/bind",
            {"context": "tickt", "entity": "T-481", "role": "support"},
            r"no context 'tickt' .*did you mean 'ticket'\?",
            id="bind-unknown-context",
        ),
        pytest.param(
            "/v1/bind",
            {"context": "ticket", "role": "support"},
            r"'ticket' is keyed by ticket id: name the entity",
            id="bind-missing-key",
        ),
        pytest.param(
            "/v1/bind",
            {"context": "client", "entity": "acme", "role": "client-desk"},
            r"role 'client-desk' cannot call context_bind",
            id="bind-role-without-capability",
        ),
        pytest.param(
            "/v1/unbind",
            {"context": "ticket", "role": "support"},
            r"no binding of 'ticket' made by context_bind here to remove",
            id="unbind-nothing-bound",
        ),
    ],
)
def test_binding_refusals_are_409_with_the_reason(
    served: Served, path: str, body: dict[str, Any], reason: str
) -> None:
    answer = post(served, path, body | {"chat": FORUM, "thread": "77"}, 409)
    assert re.search(reason, answer["refused"]), answer


def test_unbinding_an_access_yaml_binding_is_refused(served: Served) -> None:
    answer = post(served, "/v1/unbind", {"context": "client", "chat": ACME, "role": "support"}, 409)
    assert re.search(r"by access\.yaml .* edit that rule", answer["refused"])


def test_open_reads_the_context_or_says_why_not(served: Served) -> None:
    shopper = {"bot": "desk", "chat": "tg:user:42"}
    opened = post(served, "/v1/open", {"context": "policy", "turn": shopper})
    assert opened["context"] == "policy"
    assert "Underwear, earrings and gift cards" in opened["text"]
    acme = {"bot": "desk", "chat": ACME}
    refused = post(served, "/v1/open", {"context": "client", "entity": "globex", "turn": acme}, 409)
    assert "acme" in refused["refused"]


def test_a_turns_open_past_chars_is_delivered_as_v1_open_delivers_it(served: Served) -> None:
    path = served.brain / "features" / "agency" / "client.context.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("entity: client slug", "entity: client slug\nchars: 120"))
    engine = served.service.engine
    wait_for(lambda: engine.brain.contexts["client"].chars == 120)
    shopper = {"bot": "nova", "chat": "tg:user:42", "role": "client-desk"}
    body = shopper | {"input": "hi", "open": [{"context": "client", "entity": "acme"}]}
    turn = post(served, "/v1/turns", body | {"dry_run": True})
    assert ("client", "acme", "ask") in pairs(turn)
    assert "client" not in [s["context"] for s in turn["stubbed"]]
    (block,) = [b["text"] for b in turn["blocks"] if b["context"] == "client"]
    assert "say you cannot discuss it." in block  # the instructions, whole
    assert "1 row, not shown: no room left in this context" in block
    opened = post(served, "/v1/open", {"context": "client", "entity": "acme", "turn": shopper})
    assert opened["text"] == block, "one rule: a turn's open is context_open"


def test_a_turn_that_cannot_fit_is_409_with_the_fit(served: Served) -> None:
    manifest = served.brain / "constitution" / "MANIFEST.yaml"
    text = manifest.read_text(encoding="utf-8")
    small = text.replace("input_allocation: 150000", "input_allocation: 50")
    assert small != text
    manifest.write_text(small, encoding="utf-8")
    # The edited MANIFEST reaches the requests after the watcher saw it: no restart.
    engine = served.service.engine
    wait_for(lambda: engine.brain.manifest.model.input_allocation == 50)
    answer = post(served, "/v1/turns", {"bot": "nova", "chat": ACME, "input": "hi"}, 409)
    assert answer["fit"]["input_allocation"] == 50
    assert answer["fit"]["estimate"] > 50
    assert "input_allocation" in answer["overflow"] or "allocation" in answer["overflow"]
    assert get(served, "/v1/turns")["turns"] == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param("/v1/turns", {"chatt": "x"}, ["body", "chatt"], id="unknown-field"),
        pytest.param("/v1/turns", {"run": "heartbeat"}, ["body", "run"], id="run-without-id"),
        pytest.param("/v1/turns", {"run": "beat:x"}, ["body", "run"], id="run-of-no-kind"),
        pytest.param("/v1/turns", {"chat": "a\x00b"}, ["body", "chat"], id="nul-in-chat"),
        pytest.param("/v1/turns", {"thread": ""}, ["body", "thread"], id="empty-thread"),
        pytest.param("/v1/turns", {"at": "2026-11-29T19:00:00"}, ["body", "at"], id="naive-time"),
        pytest.param("/v1/turns", {"at": "0001-01-01T00:00:00Z"}, ["body", "at"], id="year-1"),
        pytest.param("/v1/turns", {"format": "xml"}, ["body", "format"], id="unknown-format"),
        pytest.param(
            "/v1/turns",
            {"open": [{"entity": "x"}]},
            ["body", "open", "0", "context"],
            id="open-without-context",
        ),
        pytest.param(
            "/v1/send", {"bot": "nova", "chat": "c"}, ["body", "text"], id="send-without-text"
        ),
        pytest.param("/v1/bind", {"chat": "c"}, ["body", "context"], id="bind-without-context"),
        pytest.param("/v1/what-if", {"since": "7 days"}, ["body", "since"], id="bad-since"),
        pytest.param(
            "/v1/what-if", {"set": {"contexts.maxActiv": 5}}, ["body", "set"], id="unknown-knob"
        ),
        pytest.param(
            "/v1/what-if", {"set": {"contexts.keep": 5}}, ["body", "set"], id="keep-refused"
        ),
        pytest.param(
            "/v1/what-if",
            {"set": {"contexts.maxActive": True}},
            ["body", "set", "contexts.maxActive"],
            id="bool-knob",
        ),
    ],
)
def test_a_bad_body_is_422_naming_the_field(
    served: Served, path: str, body: dict[str, Any], field: list[str]
) -> None:
    detail = post(served, path, body, 422)["detail"]
    assert any(problem["loc"][: len(field)] == field for problem in detail), detail


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param({"role": "nosuch"}, r"no role 'nosuch' in this brain", id="unknown-role"),
        pytest.param({"run": "heartbeat:nosuch"}, r"no heartbeat 'nosuch'", id="unknown-run"),
        pytest.param({"bot": "nobot"}, r"no rule with a role for bot 'nobot'", id="no-rule"),
        pytest.param({"role": "coach", "entity": "x"}, r"needs a run", id="entity-without-run"),
    ],
)
def test_a_turn_keel_cannot_prepare_as_asked_is_422_with_the_reason(
    served: Served, body: dict[str, Any], reason: str
) -> None:
    answer = post(served, "/v1/turns", body, 422)
    assert re.search(reason, answer["detail"]), answer


def test_report_context_and_explain_read_the_ledger(served: Served) -> None:
    post(served, "/v1/turns", {"bot": "nova", "chat": ACME, "open": [{"context": "leave"}]})
    report = get(served, "/v1/report", role="client-desk", since="7d")
    assert report["role"] == "client-desk"
    assert report["turns"] == 1
    assert report["contexts"][0]["context"] == "client"
    context = get(served, "/v1/context", chat=ACME)
    assert context["contexts"][0]["context"] == "client"
    assert context["window"]["window"] == 200000
    turn_id = get(served, "/v1/turns")["turns"][0]["id"]
    explained = {r["context"]: r for r in get(served, f"/v1/turns/{turn_id}/explain")["contexts"]}
    assert explained["client"]["status"] == "attached"
    assert explained["leave"]["status"] == "refused"
    dry = post(served, "/v1/explain", {"bot": "nova", "chat": ACME})
    assert dry["dry_run"] is True
    assert dry["id"] is None
    assert len(get(served, "/v1/turns")["turns"]) == 1


def test_what_if_refits_the_window_and_records_nothing(served: Served) -> None:
    for _ in range(2):
        post(served, "/v1/turns", {"bot": "nova", "chat": ACME})
    found = post(served, "/v1/what-if", {"set": {"context.client.chars": 100}, "since": "1d"})
    assert found["set"] == ["context.client.chars=100"]
    client = next(c for c in found["contexts"] if c["context"] == "client")
    assert client["stubbed"] == {"before": 0, "after": 2}
    assert len(get(served, "/v1/turns")["turns"]) == 2


def test_doctor_answers_the_report(served: Served) -> None:
    report = get(served, "/v1/doctor")
    assert report["failed"] is False
    assert all(set(c) >= {"check", "level", "message"} for c in report["checks"])


@pytest.mark.parametrize(
    ("path", "params", "reason"),
    [
        pytest.param("/v1/turns/424242", {}, "no turn 424242", id="turn"),
        pytest.param("/v1/turns/424242/explain", {}, "no turn 424242", id="explain"),
        pytest.param("/v1/report", {"role": "nosuch"}, "no role 'nosuch'", id="report-role"),
        pytest.param("/v1/context", {"chat": "tg:chat:0"}, "no recorded turn", id="context"),
        pytest.param("/v1/runs/run-404", {}, "no run 'run-404'", id="run"),
    ],
)
def test_a_missing_thing_is_404(
    served: Served, path: str, params: dict[str, str], reason: str
) -> None:
    assert reason in get(served, path, 404, **params)["detail"]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        pytest.param("/v1/turns/0", {}, id="turn-id-0"),
        pytest.param("/v1/turns/99999999999999999999", {}, id="turn-id-too-large"),
        pytest.param("/v1/report", {"role": "coach", "since": "soon"}, id="report-since"),
        pytest.param("/v1/report", {}, id="report-without-role"),
        pytest.param("/v1/turns", {"limit": "-1"}, id="negative-limit"),
        pytest.param("/v1/context", {}, id="context-without-chat"),
    ],
)
def test_a_bad_query_is_422(served: Served, path: str, params: dict[str, str]) -> None:
    assert get(served, path, 422, **params)["detail"]


FAMILY = "tg:chat:-1001000000001"


def test_the_shopping_list_is_shown_edited_in_place_and_read_by_a_reply(served: Served) -> None:
    where = {"bot": "nova", "chat": FAMILY}
    shown = post(served, "/v1/widgets", where | {"context": "shopping", "message_id": "list-1"})
    assert shown["widget"] == "shopping"
    assert shown["text"].splitlines()[:3] == [
        "Shopping list",
        "1. oat milk · 2 cartons",
        "2. apples · 1 kg",
    ]
    assert post(served, "/v1/widgets/refresh", {})["edited"] == []
    bare = served.client.post("/v1/widgets/refresh")  # no body at all: every field is optional
    assert (bare.status_code, bare.json()["edited"], bare.json()["left"]) == (200, [], [])
    with served.service.engine.store.transaction() as tx:
        tx.connection.exec_driver_sql("UPDATE home_shopping_items SET done = 1 WHERE item_id = 3")
    (edit,) = post(served, "/v1/widgets/refresh", {"at": AT})["edited"]
    assert (edit["message_id"], edit["context"]) == ("list-1", "shopping")
    assert "apples" not in edit["text"]
    history = get(served, "/v1/history", chat=FAMILY)["messages"]
    assert [m["text"] for m in history] == [edit["text"]], "edited in place"
    turn = post(served, "/v1/turns", where | {"reply_to": ["list-1"], "input": "2 done"})
    recorded = get(served, f"/v1/turns/{turn['id']}")
    (current,) = [s["text"] for s in recorded["sections"] if s["id"] == "current"]
    assert current.endswith("\n2. dishwasher tabs\n3. birthday candles · 12\n\n2 done")


def test_a_context_without_a_widget_is_a_422_naming_those_with_one(served: Served) -> None:
    body = {"bot": "nova", "chat": FAMILY, "context": "client"}
    answer = post(served, "/v1/widgets", body, 422)
    assert "declares no widget" in answer["detail"]
    assert "(contexts with a widget: shopping)" in answer["detail"]
