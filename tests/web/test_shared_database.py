"""Several servers on one PostgreSQL database: turns numbered once, the seed played once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from keel.web.serving import build_service
from tests.web.conftest import prepared_brain

ACME = "tg:chat:-1002000000101"


@pytest.mark.postgres
def test_two_servers_share_one_database(tmp_path: Path, postgres_url_in_schema: str) -> None:
    url = postgres_url_in_schema
    brain = prepared_brain(tmp_path, url)
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda _: build_service(brain, url, env={}), range(2)))
    services = [svc for svc, _ in built]
    # Both started on a new database at once: exactly one of them played the seed.
    assert sorted(svc.seeded.played for svc in services) == [0, 70]
    clients = [TestClient(app) for _, app in built]
    before = len(clients[0].get("/v1/turns", params={"chat": ACME, "limit": 1000}).json()["turns"])

    def post(index: int) -> int:
        body = {"bot": "nova", "chat": ACME, "input": f"message {index}"}
        answer = clients[index % 2].post("/v1/turns", json=body)
        assert answer.status_code == 200, answer.text
        number: int = answer.json()["turn"]
        return number

    with ThreadPoolExecutor(max_workers=8) as pool:
        numbers = sorted(pool.map(post, range(24)))
    assert numbers == list(range(before + 1, before + 25))
    listed = clients[1].get("/v1/turns", params={"chat": ACME, "limit": 1000}).json()["turns"]
    assert len(listed) == before + 24
    for svc in services:
        svc.engine.close()
