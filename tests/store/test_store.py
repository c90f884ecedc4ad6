"""Store: migrations, transactions that commit whole or leave nothing, errors that say the fix."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, select, text

from keel.brain.specs import ReachEntry
from keel.errors import StoreError
from keel.link.values import Binding, Conversation, KeptLink, Origin
from keel.store import MIGRATIONS, LedgerEntry, Migration, Store
from keel.store import schema as keel_schema

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CONV = Conversation(bot="nova", chat="tg:chat:1", thread="7")
NAMES = tuple(name for name, _ in MIGRATIONS)


def _keel_tables(engine: Engine) -> list[str]:
    return sorted(t for t in inspect(engine).get_table_names() if t.startswith("keel_"))


def _write_a_turn(store: Store, *, then_fail: bool) -> None:
    with store.transaction() as tx:
        turn = tx.next_turn(CONV)
        tx.record_origin(
            Origin(
                bot="nova",
                chat="tg:chat:1",
                message_id="m1",
                sent_at=NOW,
                reach=(ReachEntry(context="ticket", entity="T-1"),),
            )
        )
        tx.bind(Binding(context="ticket", entity="T-1", chat="tg:chat:1"))
        tx.keep(
            CONV,
            [
                KeptLink(
                    context="ticket",
                    entity="T-1",
                    kind="reply",
                    feature="support",
                    until_turn=turn + 3,
                )
            ],
        )
        tx.record_ledger(
            [
                LedgerEntry(
                    bot="nova",
                    chat="tg:chat:1",
                    thread="7",
                    turn=turn,
                    role="desk",
                    at=NOW,
                    context="ticket",
                    feature="support",
                    entity="T-1",
                    link="reply",
                    chars=120,
                )
            ]
        )
        if then_fail:
            raise RuntimeError("the model call failed")


def _nothing_written(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.current_turn(CONV) == 0
        assert tx.origins("nova", "tg:chat:1", ["m1"]) == ()
        assert tx.bindings("tg:chat:1") == ()
        assert tx.kept(CONV) == ()
        assert tx.ledger() == ()


def test_migrate_is_idempotent(engine: Engine) -> None:
    store = Store(engine, clock=lambda: NOW)
    assert store.applied() == ()
    assert store.migrate() == NAMES
    assert store.migrate() == ()
    assert Store(engine).migrate() == ()
    assert store.applied() == NAMES
    with engine.connect() as conn:
        stamps = conn.execute(select(keel_schema.migrations.c.applied_at)).scalars().all()
    assert stamps == [NOW] * len(NAMES)
    assert all(stamp.tzinfo is not None for stamp in stamps)


def test_migrations_build_exactly_the_schema_the_queries_use(engine: Engine) -> None:
    Store(engine).migrate()
    inspector = inspect(engine)
    expected = sorted(keel_schema.metadata.tables)
    assert _keel_tables(engine) == expected
    for name, table in keel_schema.metadata.tables.items():
        columns = {c["name"]: c["nullable"] for c in inspector.get_columns(name)}
        assert columns == {c.name: c.nullable for c in table.columns}, name
        primary = inspector.get_pk_constraint(name)["constrained_columns"]
        assert primary == [c.name for c in table.primary_key.columns], name
        indexes = {
            (i["name"], tuple(i["column_names"]), bool(i["unique"]))
            for i in inspector.get_indexes(name)
        }
        assert indexes == {
            (i.name, tuple(c.name for c in i.columns), bool(i.unique)) for i in table.indexes
        }, name


def test_migrating_at_once_from_several_connections_applies_each_migration_once(
    engine: Engine,
) -> None:
    workers = 4
    barrier = threading.Barrier(workers)
    results: list[tuple[str, ...]] = []
    errors: list[BaseException] = []

    def migrate() -> None:
        barrier.wait()
        try:
            results.append(Store(engine).migrate())
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised by the test
            errors.append(exc)

    threads = [threading.Thread(target=migrate) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results) == [(), (), (), NAMES]
    assert Store(engine).applied() == NAMES


def test_a_failing_migration_leaves_nothing(engine: Engine) -> None:
    def broken(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE keel_extra (x INTEGER)"))
        conn.execute(text("SELECT nothing FROM keel_no_such_table"))

    migrations: list[tuple[str, Migration]] = [*MIGRATIONS, ("9999_broken", broken)]
    with pytest.raises(StoreError, match=r"cannot migrate Keel's tables .*nothing was applied"):
        Store(engine, migrations=migrations).migrate()
    assert _keel_tables(engine) == []
    assert Store(engine).applied() == ()


def test_a_database_migrated_by_a_newer_keel_is_refused(engine: Engine) -> None:
    def later(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE keel_later (x INTEGER)"))

    Store(engine, migrations=[*MIGRATIONS, ("9999_later", later)]).migrate()
    with pytest.raises(StoreError, match=r"9999_later.*newer Keel: upgrade Keel"):
        Store(engine).migrate()


def test_migration_names_must_be_unique(engine: Engine) -> None:
    twice: list[tuple[str, Migration]] = [*MIGRATIONS, *MIGRATIONS]
    with pytest.raises(
        StoreError, match=r"0001_keel_tables, .*0003_keel_sessions, .* appear twice"
    ):
        Store(engine, migrations=twice).migrate()


def test_a_transaction_commits_every_write_together(store: Store) -> None:
    _write_a_turn(store, then_fail=False)
    with store.transaction() as tx:
        assert tx.current_turn(CONV) == 1
        assert len(tx.origins("nova", "tg:chat:1", ["m1"])) == 1
        assert len(tx.bindings("tg:chat:1")) == 1
        assert len(tx.kept(CONV)) == 1
        assert len(tx.ledger()) == 1


def test_a_read_waits_for_no_writer_and_writes_nothing(store: Store) -> None:
    with store.transaction() as writing:
        writing.next_turn(CONV)  # holds SQLite's write lock until the block ends
        writing.record_message(CONV, turn=1, at=NOW, speaker="user", text="T-1?")
        with store.reading() as tx:
            assert tx.current_turn(CONV) == 0  # what is committed, not what is being written
            assert tx.history(CONV, before_turn=9, limit=5) == ()
    with store.reading() as tx:
        assert [m.text for m in tx.history(CONV, before_turn=9, limit=5)] == ["T-1?"]
        tx.next_turn(CONV)  # rolled back with the read
    with store.reading() as tx:
        assert tx.current_turn(CONV) == 1


def test_a_failing_transaction_leaves_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError, match="the model call failed"):
        _write_a_turn(store, then_fail=True)
    _nothing_written(store)


def test_a_store_error_mid_transaction_leaves_nothing(store: Store) -> None:
    def turn() -> None:
        with store.transaction() as tx:
            tx.next_turn(CONV)
            tx.bind(Binding(context="ticket", entity="T-1", chat="tg:chat:1"))
            naive = datetime(2025, 1, 1)
            tx.record_origin(Origin(bot="nova", chat="tg:chat:1", message_id="m1", sent_at=naive))

    with pytest.raises(StoreError, match="has no time zone"):
        turn()
    _nothing_written(store)


def test_a_database_error_mid_transaction_leaves_nothing(store: Store, engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE keel_ledger"))
    entry = LedgerEntry(
        bot="nova",
        chat="tg:chat:1",
        thread=None,
        turn=1,
        role="desk",
        at=NOW,
        context="ticket",
        feature="support",
        entity=None,
        link="chat",
        chars=1,
    )

    def turn() -> None:
        with store.transaction() as tx:
            tx.next_turn(CONV)
            tx.record_ledger([entry])

    with pytest.raises(
        StoreError, match=r"cannot record the spend ledger: .* call Store\.migrate\(\)"
    ):
        turn()
    with store.transaction() as tx:
        assert tx.current_turn(CONV) == 0


def test_using_the_store_before_migrating_says_to_migrate(engine: Engine) -> None:
    with (
        pytest.raises(
            StoreError, match=r"cannot count a turn in tg:chat:1: .* call Store\.migrate\(\) before"
        ),
        Store(engine).transaction() as tx,
    ):
        tx.next_turn(CONV)


def test_a_transaction_cannot_be_used_after_its_block(store: Store) -> None:
    with store.transaction() as tx:
        tx.next_turn(CONV)
    with pytest.raises(StoreError, match="this transaction has ended"):
        tx.next_turn(CONV)


def test_an_unreachable_database_names_the_fix(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{(tmp_path / 'missing' / 'keel.db').as_posix()}")
    with pytest.raises(
        StoreError, match=r"cannot migrate Keel's tables .* must exist and be writable"
    ):
        Store(engine).migrate()
    engine.dispose()


@pytest.fixture
def recipe_engine(tmp_path: Path) -> Iterator[Engine]:
    """A SQLite engine set up with SQLAlchemy's recipe for real transactions (BEGIN on begin)."""
    engine = create_engine(f"sqlite:///{(tmp_path / 'recipe.db').as_posix()}")

    @event.listens_for(engine, "connect")
    def _no_driver_transactions(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")

    yield engine
    engine.dispose()


def test_an_engine_that_begins_its_own_sqlite_transactions_works_too(recipe_engine: Engine) -> None:
    store = Store(recipe_engine)
    assert store.migrate() == NAMES
    with pytest.raises(RuntimeError):
        _write_a_turn(store, then_fail=True)
    _nothing_written(store)
    _write_a_turn(store, then_fail=False)
    with recipe_engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(keel_schema.turns)).scalar_one() == 1


def test_the_people_migration_gives_turns_before_it_no_sender(engine: Engine) -> None:
    before = NAMES.index("0008_keel_people")
    Store(engine, migrations=MIGRATIONS[:before]).migrate()
    journal = keel_schema.turn_journal
    row = {
        "bot": "nova",
        "chat": "tg:chat:1",
        "thread": "",
        "turn": 1,
        "role": "support",
        "at": NOW,
        "data": "{}",
        "replay": "{}",
    }
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO keel_turn_journal (bot, chat, thread, turn, role, at, data, replay) "
                "VALUES (:bot, :chat, :thread, :turn, :role, :at, :data, :replay)"
            ),
            row,
        )
    assert Store(engine).migrate() == NAMES[before:]
    assert "sender" in {c["name"] for c in inspect(engine).get_columns(journal.name)}
    with engine.connect() as conn:
        assert conn.execute(select(journal.c.sender)).scalars().all() == [None]
