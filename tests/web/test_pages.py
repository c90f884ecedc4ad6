"""The dashboard's pages through the test client, on SQLite and PostgreSQL: each renders
what the journal and the ledger hold, and the approval form decides a card."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

import pytest

from keel.web.runs import NOT_BUILT, NoRuns
from tests.web.conftest import Served, wait_for

ACME = "tg:chat:-1002000000101"
LEARNER = "tg:user:2"


def turn(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    answer = served.client.post("/v1/turns", json=body)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def html(served: Served, path: str, status: int = 200) -> str:
    answer = served.client.get(path)
    assert answer.status_code == status, (path, answer.status_code)
    assert answer.headers["content-type"].startswith("text/html")
    return answer.text


def stubbing_turn(served: Served) -> dict[str, Any]:
    """The Dutch learner's skip hook with every practice linked: maxActive stubs one."""
    for practice, message in (("knm", "knm-1"), ("listen", "lis-1"), ("write", "wri-1")):
        sent = {"bot": "tutor", "chat": LEARNER, "text": practice, "message_id": message}
        assert (
            served.client.post(
                "/v1/send", json=sent | {"run": f"scenario:{practice}-practice"}
            ).status_code
            == 200
        )
    body = {
        "bot": "tutor",
        "chat": LEARNER,
        "dm": True,
        "run": "hook:skip",
        "reach": [{"context": "read"}],
        "reply_to": ["knm-1", "lis-1", "wri-1"],
    }
    return turn(served, body)


def test_every_page_renders(served: Served) -> None:
    made = turn(served, {"bot": "nova", "chat": ACME, "input": "hello there"})
    for path in ("/", "/turns", "/chats", "/runs", "/doctor", "/runs/run-1", "/roles/client-desk"):
        assert "<main" in html(served, path)
    assert f'href="/turns/{made["id"]}"' in html(served, "/")
    assert "hello there" in html(served, f"/chat?chat={ACME}")
    assert ACME in html(served, "/chats")


def test_the_inspector_shows_the_turns_sections_stubs_and_input(served: Served) -> None:
    made = stubbing_turn(served)
    assert made["stubbed"], made
    page = html(served, f"/turns/{made['id']}")
    for section in made["sections"]:
        budget = section["budget_tokens"]
        row = (
            f'data-section="{section["id"]}" data-budget="{budget if budget is not None else ""}" '
            f'data-used="{section["used_tokens"]}"'
        )
        assert row in page, section["id"]
    for stub in made["stubbed"]:
        assert f'data-context="{stub["context"]}" data-entity="" data-knob="{stub["knob"]}"' in page
    assert "Rendered input" in page
    assert "You are tutor." in page
    assert re.search(r'<div class="window" [^>]*data-used="\d+" data-window="200000"', page)


def test_the_role_page_charts_its_turns(served: Served) -> None:
    made = stubbing_turn(served)
    page = html(served, "/roles/dutch-coach")
    assert '<svg class="chart"' in page
    assert f'href="/turns/{made["id"]}"' in page
    assert 'class="dot stubbed"' in page
    assert "context.stubbed" in page  # the finding of the stub


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        pytest.param("/turns/424242", 404, "no turn 424242", id="turn"),
        pytest.param("/roles/nosuch", 404, "no role", id="role"),
        pytest.param("/roles/coach?since=soon", 422, "write a span", id="since"),
        pytest.param("/runs/run-9", 404, "no run", id="run"),
        pytest.param("/chat", 404, "name a chat", id="chat"),
    ],
)
def test_a_missing_page_says_what_is_missing(
    served: Served, path: str, status: int, text: str
) -> None:
    assert text in html(served, path, status)


def test_a_card_is_approved_from_the_runs_page(served: Served) -> None:
    page = html(served, "/runs")
    assert 'action="/runs/cards/card-1"' in page
    host = {"Origin": "http://testserver"}
    decided = served.client.post(
        "/runs/cards/card-1",
        data={"decision": "approve", "back": "/runs/run-1"},
        headers=host,
        follow_redirects=False,
    )
    assert decided.status_code == 303
    assert decided.headers["location"] == "/runs/run-1?decided=card-1&run=run-1"
    assert served.runs.cards() == []
    assert "approved" in html(served, "/runs/run-1")
    said = html(served, decided.headers["location"])
    assert "Card card-1 approved by dashboard: run run-1 has its answer, and it goes on." in said
    # The address names a card; what the banner says is read from the card as recorded.
    assert 'id="notice"' not in html(served, "/runs?decided=card-9&run=run-1")
    again = served.client.post("/runs/cards/card-1", data={"decision": "deny"}, headers=host)
    assert again.status_code == 409
    assert "approved already" in again.text
    unknown = served.client.post("/runs/cards/card-7", data={"decision": "deny"}, headers=host)
    assert unknown.status_code == 404
    bad = served.client.post("/runs/cards/card-1", data={"decision": "maybe"}, headers=host)
    assert bad.status_code == 422


def test_a_decision_refused_for_who_made_it_is_shown_on_the_card(served: Served) -> None:
    [card] = served.runs.cards()
    refusal = {
        "by": "tg:user:9",
        "at": "2026-11-29T19:05:00+00:00",
        "reason": "tg:user:9 may not decide cards of refund — ask an approver",
    }
    run = served.runs.runs_by_id["run-1"]
    served.runs.runs_by_id["run-1"] = replace(run, cards=(replace(card, refused=(refusal,)),))
    for path in ("/runs", "/runs/run-1"):
        page = html(served, path)
        assert (
            '<span class="status refused">refused</span> tg:user:9 at 2026-11-29 19:05 — '
            "tg:user:9 may not decide cards of refund — ask an approver"
        ) in page, path


def test_a_build_without_runs_says_so(served: Served) -> None:
    served.service.runs = NoRuns()
    assert NOT_BUILT in html(served, "/runs")
    assert NOT_BUILT in html(served, "/")
    assert NOT_BUILT in html(served, "/runs/run-1", 404)


def test_a_broken_brain_file_is_shown(served: Served) -> None:
    broken = served.brain / "features" / "support" / "kb.context.md"
    broken.write_text("---\nwhne: [ask]\n---\nbody\n", encoding="utf-8")
    engine = served.service.engine
    wait_for(lambda: any(s.path.endswith("kb.context.md") for s in engine.brain.skips))
    page = html(served, "/doctor")
    assert "kb.context.md" in page
    assert "did not load" in html(served, "/")


def test_the_system_page_shows_recent_runs_and_the_cards_waiting_to_be_decided(
    served: Served,
) -> None:
    page = html(served, "/")
    assert 'data-card="card-1"' in page
    assert 'action="/runs/cards/card-1"' in page  # approve or deny from the first page
    assert 'href="/runs/run-1"' in page
    host = {"Origin": "http://testserver"}
    elsewhere = served.client.post(
        "/runs/cards/card-1", data={"decision": "approve", "back": "//evil.example/"}, headers=host
    )
    assert elsewhere.status_code == 422
    assert "a page of this dashboard" in elsewhere.text
    assert "<title>Refused" in elsewhere.text
    assert served.runs.cards() != []  # nothing was decided
    decided = served.client.post(
        "/runs/cards/card-1",
        data={"decision": "approve", "back": "/"},
        headers=host,
        follow_redirects=False,
    )
    assert (decided.status_code, decided.headers["location"]) == (
        303,
        "/?decided=card-1&run=run-1",
    )
    assert 'data-card="card-1"' not in html(served, "/")


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/chat?chat=%00", id="chat-nul"),
        pytest.param("/chat?chat=" + "x" * 600, id="chat-long"),
        pytest.param("/turns?chat=%00", id="turns-chat-nul"),
        pytest.param("/runs/%00", id="run-nul"),
        pytest.param("/roles/%00", id="role-nul"),
    ],
)
def test_a_name_no_store_can_hold_is_refused_with_422_on_every_database(
    served: Served, path: str
) -> None:
    answer = served.client.get(path)
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])


def test_a_turns_sender_shows_on_its_page_and_in_its_chats_history(served: Served) -> None:
    made = turn(served, {"bot": "nova", "chat": ACME, "input": "hello", "sender": "tg:user:7"})
    assert made["sender"] == "tg:user:7"
    assert served.client.get(f"/v1/turns/{made['id']}").json()["sender"] == "tg:user:7"
    assert "from <code>tg:user:7</code>" in html(served, f"/turns/{made['id']}")
    assert "· tg:user:7</span> hello" in html(served, f"/chat?chat={ACME}")
    unnamed = turn(served, {"bot": "nova", "chat": ACME, "input": "again"})
    assert unnamed["sender"] is None
    assert "from <code>" not in html(served, f"/turns/{unnamed['id']}")


def test_every_page_declares_an_inline_icon(served: Served) -> None:
    """A browser asks for /favicon.ico unless the page names an icon: the base template
    names one inline, an SVG that parses, so no page costs a 404."""
    for path in ("/", "/turns", "/login"):
        icon = re.search(
            r'<link rel="icon" href="data:image/svg\+xml,([^"]+)">', html(served, path)
        )
        assert icon, path
        svg = ElementTree.fromstring(unquote(icon[1]))
        assert svg.tag == "{http://www.w3.org/2000/svg}svg"


def test_a_chats_history_shows_a_widget_as_its_list_line_by_line(served: Served) -> None:
    family = {"bot": "nova", "chat": "tg:chat:-1001000000001"}
    for message in ("list-1", "list-2"):
        answer = served.client.post(
            "/v1/widgets", json=family | {"context": "shopping", "message_id": message}
        )
        assert answer.status_code == 200, answer.text
    page = html(served, f"/chat?chat={family['chat']}")
    items = re.findall(r"<li class=\"([^\"]*)\">(.*?)</li>", page, re.DOTALL)
    (old, live) = [(c, body) for c, body in items if "Shopping list" in body]
    assert "widget · replaced by a newer list" in old[1]
    assert "widget shopping</span>" in live[1]
    assert "assistant" not in old[1] + live[1], "a widget is no turn's message"
    assert "widget" in live[0].split()
    lines = re.search(r'<span class="lines">(.*?)</span>', live[1], re.DOTALL)
    assert lines is not None
    assert lines.group(1) == (
        "Shopping list\n1. oat milk · 2 cartons\n2. apples · 1 kg\n3. dishwasher tabs\n"
        "4. birthday candles · 12"
    )
    css = served.client.get("/static/keel.css").text
    assert re.search(r"\.lines\s*\{[^}]*white-space:\s*pre-line", css)


def test_a_turn_replying_to_a_widget_says_so_on_its_page(served: Served) -> None:
    family = {"bot": "nova", "chat": "tg:chat:-1001000000001"}
    shown = served.client.post("/v1/widgets", json=family | {"context": "shopping"})
    assert shown.status_code == 200, shown.text
    sent = shown.json()["message_id"]
    reply = served.client.post("/v1/turns", json=family | {"input": "2 done", "reply_to": [sent]})
    assert reply.status_code == 200, reply.text
    page = html(served, f"/turns/{reply.json()['id']}")
    said = re.search(r'<p class="replied-widget">(.*?)</p>', page, re.DOTALL)
    assert said is not None
    assert said.group(1) == (
        "replied to widget <code>shopping</code>: its 4 lines, numbered as shown"
    )


def test_the_turn_pages_explain_names_the_link_of_each_refusal(served: Served) -> None:
    globex = [{"context": "client", "entity": "globex"}]
    made = turn(served, {"bot": "nova", "chat": ACME, "open": globex, "attach": globex})
    page = html(served, f"/turns/{made['id']}")
    table = page[page.index('id="explain"') :]
    refused = re.findall(r"<td>(\w+) link: this chat is bound to client &#39;acme&#39;", table)
    assert sorted(refused) == ["ask", "code"]
