"""`ctx.query` inside a worker, in this process: a statement out, its rows or Keel's reason
back, a deadline that ends the wait, and parameters checked before anything is sent.

The real channel is exercised by tests/code/test_query_relay.py; here `send` and `deliver`
stand in for the two ends of it, so each case runs without a worker.
"""

from __future__ import annotations

import threading
import time
from datetime import date
from typing import Any

import pytest

from keel.code.ctx_query import QueryLink
from keel.code.define import CallFailed


class Keel:
    """Keel's end: answers each statement sent with `reply`, from another thread."""

    def __init__(self, reply: dict[str, Any] | None) -> None:
        self.reply = reply
        self.sent: list[dict[str, Any]] = []
        self.link: QueryLink | None = None

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if self.reply is not None and self.link is not None:
            answer = {"op": "rows", "seq": message["seq"], **self.reply}
            threading.Thread(target=self.link.deliver, args=(answer,)).start()


def linked(reply: dict[str, Any] | None, *, seconds: float = 5.0) -> tuple[QueryLink, Keel]:
    keel = Keel(reply)
    link = QueryLink(7, send=keel.send, deadline=time.monotonic() + seconds)
    keel.link = link
    return link, keel


def test_a_statement_goes_out_with_its_parameters_and_its_rows_come_back() -> None:
    link, keel = linked({"rows": [{"id": "T-1"}]})
    assert link.query("SELECT id FROM t WHERE id = :id", {"id": "T-1"}) == [{"id": "T-1"}]
    assert link.query("SELECT ?", [1, 2.5, True, None]) == [{"id": "T-1"}]
    first, second = keel.sent
    assert first == {
        "op": "query",
        "id": 7,
        "seq": 1,
        "sql": "SELECT id FROM t WHERE id = :id",
        "params": {"id": "T-1"},
    }
    assert (second["seq"], second["params"]) == (2, [1, 2.5, True, None])


def test_keels_refusal_raises_call_failed_with_its_reason() -> None:
    link, _ = linked({"error": {"type": "Refused", "said": "no writes here"}})
    with pytest.raises(CallFailed, match="no writes here") as failed:
        link.query("DELETE FROM t")
    assert (failed.value.call, failed.value.kind) == ("query", "Refused")


def test_no_answer_by_the_deadline_is_a_timeout() -> None:
    link, _ = linked(None, seconds=-1.0)  # Keel never answers; the call's time is gone
    with pytest.raises(TimeoutError, match="deadline passed"):
        link.query("SELECT 1")


def test_an_abort_ends_every_wait_at_once() -> None:
    link, _ = linked(None, seconds=60.0)
    failed: list[BaseException] = []

    def wait() -> None:
        try:
            link.query("SELECT 1")
        except TimeoutError as exc:
            failed.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    for _ in range(1000):  # until the statement is out and waited for
        if link._waiting:
            break
        time.sleep(0.005)
    link.abort()
    waiter.join(timeout=30)
    assert not waiter.is_alive()
    assert len(failed) == 1


def test_an_answer_to_a_statement_given_up_on_is_dropped() -> None:
    link, _ = linked(None)
    link.deliver({"op": "rows", "seq": 99, "rows": []})  # nobody waits for it: no error


@pytest.mark.parametrize(
    ("sql", "params", "error", "said"),
    [
        pytest.param(b"SELECT 1", None, TypeError, "as a str, not bytes", id="sql-bytes"),
        pytest.param("SELECT :d", {"d": date(2026, 1, 1)}, TypeError, "isoformat", id="date"),
        pytest.param("SELECT :x", {"x": float("nan")}, ValueError, "must be finite", id="nan"),
        pytest.param("SELECT :x", {1: "a"}, TypeError, "names are str", id="key"),
        pytest.param("SELECT ?", "ab", TypeError, "dict or a list, not str", id="str-params"),
        pytest.param("SELECT ?", [object()], TypeError, "object", id="object"),
        pytest.param("x" * (64 << 20), None, ValueError, "too large", id="huge"),
    ],
)
def test_what_cannot_be_sent_fails_before_it_is_sent(
    sql: Any, params: Any, error: type[Exception], said: str
) -> None:
    link, keel = linked({"rows": []})
    with pytest.raises(error, match=said):
        link.query(sql, params)
    assert keel.sent == []
