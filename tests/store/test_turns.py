"""Turn numbers: per conversation, from 1, distinct under concurrent workers."""

from __future__ import annotations

import threading

import pytest

from keel.link.values import Conversation
from keel.store import Store

WHOLE = Conversation(bot="nova", chat="tg:chat:1")
THREAD = Conversation(bot="nova", chat="tg:chat:1", thread="42")
OTHER_BOT = Conversation(bot="largo", chat="tg:chat:1")


def test_turns_count_from_one_per_conversation(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.current_turn(WHOLE) == 0
        assert [tx.next_turn(WHOLE) for _ in range(3)] == [1, 2, 3]
        assert tx.next_turn(THREAD) == 1
        assert tx.next_turn(OTHER_BOT) == 1
    with store.transaction() as tx:
        assert tx.current_turn(WHOLE) == 3
        assert tx.current_turn(THREAD) == 1
        assert tx.next_turn(WHOLE) == 4


@pytest.mark.parametrize("workers", [pytest.param(8, id="eight-workers")])
def test_concurrent_turns_get_distinct_numbers(store: Store, workers: int) -> None:
    per_worker = 15
    barrier = threading.Barrier(workers)
    numbers: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        barrier.wait()
        try:
            for _ in range(per_worker):
                with store.transaction() as tx:
                    number = tx.next_turn(THREAD)
                with lock:
                    numbers.append(number)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(numbers) == list(range(1, workers * per_worker + 1))
    with store.transaction() as tx:
        assert tx.current_turn(THREAD) == workers * per_worker
