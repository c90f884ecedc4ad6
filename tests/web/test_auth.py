"""The bearer token: every `/v1` route asks for it, the dashboard signs in with it once,
and a decision posted from another site is refused, token or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web.conftest import serve_copy
from tests.web.memory_runs import MemoryRuns

TOKEN = "s3cret-token"
ROUTES = [
    ("GET", "/v1/turns"),
    ("POST", "/v1/turns"),
    ("GET", "/v1/turns/1"),
    ("GET", "/v1/turns/1/explain"),
    ("POST", "/v1/explain"),
    ("POST", "/v1/send"),
    ("POST", "/v1/bind"),
    ("POST", "/v1/unbind"),
    ("POST", "/v1/open"),
    ("GET", "/v1/report"),
    ("GET", "/v1/context"),
    ("POST", "/v1/what-if"),
    ("GET", "/v1/history"),
    ("GET", "/v1/bindings"),
    ("GET", "/v1/doctor"),
    ("GET", "/v1/runs"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs/run-1"),
    ("POST", "/v1/events/e"),
    ("GET", "/v1/approvals"),
    ("POST", "/v1/approvals/card-1"),
    ("POST", "/v1/widgets"),
    ("POST", "/v1/widgets/refresh"),
]


def test_every_v1_route_asks_for_the_token(tmp_path: Path) -> None:
    svc, client = serve_copy(tmp_path, token=TOKEN, seed=False, runs=MemoryRuns())
    with client:
        for method, path in ROUTES:
            answer = client.request(method, path, json={})
            assert answer.status_code == 401, (method, path, answer.status_code)
            assert answer.headers["www-authenticate"] == "Bearer"
            wrong = client.request(method, path, json={}, headers={"Authorization": "Bearer no"})
            assert wrong.status_code == 401, (method, path)
            # Refused before the body is read: no 422 telling how the route parses it.
            garbage = client.request(method, path, content=b"{not json")
            assert garbage.status_code == 401, (method, path, garbage.status_code)
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/v1/turns", headers=good).status_code == 200
        assert client.get("/v1/doctor", headers=good).status_code == 200
        # The health check and the API's description stay open.
        assert client.get("/healthz").status_code == 200
        assert client.get("/openapi.json").status_code == 200
    svc.engine.close()


def test_the_dashboard_signs_in_with_the_token(tmp_path: Path) -> None:
    svc, client = serve_copy(tmp_path, token=TOKEN, seed=False)
    with client:
        assert client.get("/", follow_redirects=False).headers["location"] == "/login"
        wrong = client.post("/login", data={"token": "nope"})
        assert wrong.status_code == 401
        assert "not the server" in wrong.text
        signed = client.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert signed.status_code == 303
        assert "httponly" in signed.headers["set-cookie"].lower()
        assert client.get("/").status_code == 200
        assert client.get("/v1/turns").status_code == 200  # the cookie serves the API too
    svc.engine.close()


def test_a_server_without_a_token_needs_no_sign_in(tmp_path: Path) -> None:
    svc, client = serve_copy(tmp_path, seed=False)
    with client:
        assert client.get("/v1/turns").status_code == 200
        assert "asks for no token" in client.get("/login").text
        assert client.post("/login", data={"token": "x"}).status_code == 401
    svc.engine.close()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://evil.example"}, id="other-origin"),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, id="cross-site"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
    ],
)
def test_a_decision_from_another_site_is_refused(tmp_path: Path, headers: dict[str, str]) -> None:
    runs = MemoryRuns()
    svc, client = serve_copy(tmp_path, seed=False, runs=runs)
    with client:
        answer = client.post("/runs/cards/card-1", data={"decision": "approve"}, headers=headers)
        assert answer.status_code == 403
        assert runs.cards()[0].status == "pending"
    svc.engine.close()
