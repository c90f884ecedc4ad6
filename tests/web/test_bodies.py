"""What a body may hold, checked before Keel sees it: every value a caller can send that
Keel could not hold or store is a 422 that names the field and the bound, never a 500.

Driven through the test client on SQLite and PostgreSQL, with the in-memory runs backend:
the refusals happen before any backend is asked.
"""

from __future__ import annotations

from typing import Any

import pytest

from keel.web.limits import MAX_JSON_DEPTH
from tests.web.conftest import Served

TICKET = "/v1/events/ticket.opened"


def nested(levels: int, inner: Any = None) -> Any:
    """An object `levels` deep: each level one key holding the next."""
    value: Any = {} if inner is None else inner
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def listed(levels: int) -> Any:
    """A list `levels` deep."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def refused(served: Served, path: str, body: Any) -> list[dict[str, Any]]:
    answer = served.client.post(path, json=body)
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])
    detail: list[dict[str, Any]] = answer.json()["detail"]
    return detail


def problem(detail: list[dict[str, Any]], loc: list[str]) -> str:
    """The message of the problem at `loc`; fails when there is none."""
    found = [p["msg"] for p in detail if p["loc"][: len(loc)] == loc]
    assert found, detail
    return str(found[0])


# -- times ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param(
            "/v1/turns", {"at": "0001-01-01T00:00:00+14:00"}, "at", id="turn-before-year-1-utc"
        ),
        pytest.param(
            "/v1/turns", {"at": "9999-12-31T23:59:59-14:00"}, "at", id="turn-after-year-9999-utc"
        ),
        pytest.param(
            "/v1/send",
            {"bot": "nova", "chat": "c", "text": "hi", "at": "0001-01-01T00:00:00+14:00"},
            "at",
            id="send",
        ),
        pytest.param("/v1/what-if", {"now": "0001-01-01T00:00:00+14:00"}, "now", id="what-if-now"),
        pytest.param(
            "/v1/open",
            {"context": "policy", "turn": {"at": "9999-12-31T23:59:59-14:00"}},
            "turn",
            id="open-turn",
        ),
    ],
)
def test_a_time_whose_utc_value_no_datetime_holds_is_422_with_the_range(
    served: Served, path: str, body: dict[str, Any], field: str
) -> None:
    said = problem(refused(served, path, body), ["body", field])
    assert "between 1970-01-01 and 9000-01-01" in said, said


@pytest.mark.parametrize("path", ["/v1/turns", "/v1/report?role=coach"])
def test_a_since_whose_utc_value_no_datetime_holds_is_422(served: Served, path: str) -> None:
    sep = "&" if "?" in path else "?"
    answer = served.client.get(f"{path}{sep}since=0001-01-01T00:00:00%2B14:00")
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])
    assert answer.json()["detail"][0]["loc"] == ["query", "since"]


# -- free-form JSON: an event's payload, a scenario's vars ---------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param(TICKET, {"payload": nested(900)}, "payload", id="payload-objects-900"),
        pytest.param(TICKET, {"payload": {"a": listed(900)}}, "payload", id="payload-lists-900"),
        pytest.param(
            TICKET, {"payload": nested(MAX_JSON_DEPTH + 1)}, "payload", id="payload-one-too-deep"
        ),
        pytest.param(
            "/v1/runs",
            {"run": "scenario:first-touch", "vars": nested(900)},
            "vars",
            id="vars-900",
        ),
    ],
)
def test_a_json_value_nested_too_deep_is_422_with_the_bound(
    served: Served, path: str, body: dict[str, Any], field: str
) -> None:
    said = problem(refused(served, path, body), ["body", field])
    assert f"{MAX_JSON_DEPTH} levels" in said, said


def test_a_json_value_at_the_depth_bound_is_taken(served: Served) -> None:
    body = {"payload": nested(MAX_JSON_DEPTH, {"ticket": "T-1"})}
    answer = served.client.post(TICKET, json=body)
    assert answer.status_code == 200, answer.text[:300]
    assert served.runs.fired[-1][1] == body["payload"]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        pytest.param(b'{"payload": {"ticket": "a\\ud800b"}}', "surrogate", id="lone-surrogate"),
        pytest.param(b'{"payload": {"t": ["\\udfff"]}}', "surrogate", id="surrogate-in-a-list"),
        pytest.param(b'{"payload": {"ticket": "a\\u0000b"}}', "NUL", id="nul"),
    ],
)
def test_a_string_no_database_stores_is_422_anywhere_in_a_payload(
    served: Served, raw: bytes, said: str
) -> None:
    answer = served.client.post(TICKET, content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])
    assert said in problem(answer.json()["detail"], ["body", "payload"])


# -- bodies that are not JSON ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        pytest.param(b'{"input": ', "Expecting value", id="cut-short"),
        pytest.param(b"[" * 5000 + b"]" * 5000, "deeper", id="deeper-than-the-parser-goes"),
        pytest.param(b'{"input": "\xff"}', "UTF-8", id="not-utf-8"),
    ],
)
def test_a_body_that_is_not_json_is_422_with_the_reason(
    served: Served, raw: bytes, said: str
) -> None:
    answer = served.client.post(
        "/v1/turns", content=raw, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])
    [found] = answer.json()["detail"]
    assert (found["loc"][0], found["type"]) == ("body", "json_invalid"), found
    assert said in found["msg"], found


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-content-type"),
        pytest.param({"content-type": "text/plain"}, id="text-plain"),
    ],
)
def test_a_json_body_sent_without_its_content_type_says_to_send_it_as_json(
    served: Served, headers: dict[str, str]
) -> None:
    answer = served.client.post(
        "/v1/turns", content=b'{"bot": "nova", "chat": "c", "input": "hi"}', headers=headers
    )
    assert answer.status_code == 422, (answer.status_code, answer.text[:300])
    [found] = answer.json()["detail"]
    assert found["loc"] == ["body"], found
    assert found["msg"] == (
        "the body was not read as JSON: send it with the header content-type: application/json"
    ), found


def test_a_misspelt_body_field_names_the_field_meant(served: Served) -> None:
    body = {"bot": "nova", "chat": "tg:chat:-1001000000001", "inptu": "hello"}
    detail = refused(served, "/v1/turns", body)
    [extra] = [d for d in detail if d["type"] == "extra_forbidden"]
    assert extra["loc"] == ["body", "inptu"]
    assert extra["msg"] == "Extra inputs are not permitted — did you mean 'input'?"
    unknown = refused(served, "/v1/turns", {**body, "zzzzzz": 1})
    [far] = [d for d in unknown if d["loc"] == ["body", "zzzzzz"]]
    assert far["msg"].startswith("Extra inputs are not permitted — expected one of: ")
    assert "input" in far["msg"]
