"""Budgets on whole turns: rows cut and capped, stubs naming their knob, the ledger, rollback.

Each test writes a small shop brain with its own knobs, and prepares turns through
`prepare_turn` on SQLite and on PostgreSQL, reading the views from the brain's state SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.errors import KeelError, LinkError, UsageError
from keel.link import Conversation, RunRef, TurnRequest
from keel.state.database import apply_sql, connect
from keel.store import Store
from keel.tools.context_open import open_context
from keel.turn.prepare import prepare_turn
from keel.turn.prepared import PreparedTurn
from tests.conftest import WriteBrain
from tests.runtime.driver import view_rows, view_stub

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
SHOP = Conversation(bot="till", chat="tg:chat:-42")
RESTOCK = RunRef(kind="heartbeat", id="restock")
STOCK_ROWS = 30

STATE = (
    "CREATE TABLE shop_items (sku TEXT NOT NULL PRIMARY KEY, item TEXT NOT NULL, qty INTEGER NOT NULL);\n"
    + "".join(
        f"INSERT INTO shop_items VALUES ('sku-{n:02d}', 'item number {n}', {n});\n"
        for n in range(1, STOCK_ROWS + 1)
    )
    + "CREATE VIEW shop_stock AS SELECT sku, item, qty FROM shop_items;\n"
    + "CREATE TABLE shop_manual_pages (page TEXT NOT NULL PRIMARY KEY, body TEXT NOT NULL);\n"
    + f"INSERT INTO shop_manual_pages VALUES ('p1', '{'long words ' * 50}');\n"
    + "CREATE VIEW shop_manual AS SELECT page, body FROM shop_manual_pages;\n"
)


def manifest(
    *, chars: int = 3000, max_active: int = 3, turn_chars: int = 12000, rows: int = 20
) -> str:
    return (
        f"contexts: {{ chars: {chars}, maxActive: {max_active}, turnChars: {turn_chars}, keep: 3 }}\n"
        f"state: {{ rows: {rows} }}\n"
    )


def role(capabilities: str, budget: str = "") -> str:
    extra = f"contexts_budget: {budget}\n" if budget else ""
    return f"---\ncontexts: ['*']\ncapabilities: {capabilities}\n{extra}---\nYou keep the shop.\n"


def files(**overrides: str) -> dict[str, str | bytes]:
    base: dict[str, str | bytes] = {
        "constitution/MANIFEST.yaml": manifest(),
        "state/01_shop.sql": STATE,
        "features/shop/clerk.agent.md": role("[context:read]"),
        "features/shop/mute.agent.md": role("[]"),
        # always: every turn of a role that admits it
        "features/shop/stock.context.md": (
            "---\ndescription: The stock list.\nwhen: [always]\ndata: [shop_stock]\n---\n"
            "Read stock levels from the list; never guess a quantity.\n"
        ),
        # ask: opened by the agent
        "features/shop/notes.context.md": (
            "---\ndescription: House notes.\nwhen: [ask]\n---\nThe shop closes at six.\n"
        ),
        "features/shop/manual.context.md": (
            "---\ndescription: The till manual.\nwhen: [ask]\ndata: [shop_manual]\nchars: 500\n---\n"
            "Quote the manual.\n"
        ),
        # run: the restock beat's own context
        "features/shop/restock/restock.context.md": (
            "---\nwhen: [run]\n---\nOrder what runs low, at most once a day.\n"
        ),
        "features/shop/restock/restock.heartbeat.md": (
            "---\nschedule: '0 7 * * *'\nagent: clerk\n---\nCheck the stock.\n"
        ),
    }
    base.update(overrides)
    return base


@dataclass(frozen=True)
class Shop:
    brain: Brain
    store: Store

    def turn(self, **request: object) -> PreparedTurn:
        made = TurnRequest(conversation=SHOP, now=NOW, **request)  # type: ignore[arg-type]
        return prepare_turn(self.brain, self.store, made)

    def current_turn(self) -> int:
        with self.store.transaction() as tx:
            return tx.current_turn(SHOP)


OpenShop = Callable[..., Shop]


@pytest.fixture
def open_shop(write_brain: WriteBrain, database_url: str) -> Iterator[OpenShop]:
    """Write the shop brain (with overrides) and open it on each database."""
    engines = []

    def make(**overrides: str) -> Shop:
        brain = load_brain(write_brain(files(**overrides)))
        assert brain.skips == (), brain.skips
        engine = connect(database_url, brain)
        engines.append(engine)
        if engine.dialect.name != "sqlite":
            apply_sql(engine, brain.state_sql)
        store = Store(engine)
        store.migrate()
        return Shop(brain=brain, store=store)

    yield make
    for engine in engines:
        engine.dispose()


def attached(turn: PreparedTurn) -> list[tuple[str, str]]:
    return [(a.link.context, a.link.kind) for a in turn.attached]


def stubs(turn: PreparedTurn) -> list[tuple[str, str, str]]:
    return [(s.link.context, s.link.kind, s.knob) for s in turn.stubs]


def block(turn: PreparedTurn, context: str) -> str:
    (text,) = [a.block.text for a in turn.attached if a.link.context == context]
    return text


def test_rows_past_chars_are_cut_with_a_marker_saying_how_many(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(chars=700)})
    turn = shop.turn(role="clerk")
    assert attached(turn) == [("stock", "always")]
    assert turn.attached[0].block.chars <= 700
    text = block(turn, "stock")
    shown = view_rows(text, "shop_stock")
    assert shown is not None
    assert 1 <= len(shown) < 20
    assert f"({STOCK_ROWS - len(shown)} more rows not shown)" in text
    assert "Read stock levels from the list; never guess a quantity." in text


def test_state_rows_caps_what_a_view_shows(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(rows=5)})
    text = block(shop.turn(role="clerk"), "stock")
    shown = view_rows(text, "shop_stock")
    assert shown is not None
    assert len(shown) == 5
    assert f"({STOCK_ROWS - 5} more rows not shown)" in text


def test_rows_zero_says_rows_are_switched_off(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(rows=0)})
    turn = shop.turn(role="clerk")
    assert attached(turn) == [("stock", "always")]
    text = block(turn, "stock")
    assert view_stub(text, "shop_stock") == "rows are switched off (state.rows is 0)"
    assert "never guess a quantity" in text


def test_a_view_that_cannot_show_one_row_is_stubbed_in_place(open_shop: OpenShop) -> None:
    shop = open_shop()
    turn = shop.turn(role="clerk", open=(ReachEntry(context="manual"),))
    assert ("manual", "ask") in attached(turn)
    text = block(turn, "manual")
    assert len(text) <= 500
    assert "Quote the manual." in text
    assert re.fullmatch(
        r"1 row, not shown: no room left in this context",
        view_stub(text, "shop_manual"),
    )


def test_instructions_over_chars_make_a_stub_naming_chars(open_shop: OpenShop) -> None:
    long_rules = "Never sell an item below cost. " * 10
    shop = open_shop(
        **{
            "features/shop/stock.context.md": (
                f"---\nwhen: [always]\ndata: [shop_stock]\nchars: 120\n---\n{long_rules}\n"
            )
        }
    )
    turn = shop.turn(role="clerk")
    assert turn.attached == ()
    assert stubs(turn) == [("stock", "always", "chars")]
    # Opened by name it is delivered whole, so the stub of a role that can open says so.
    assert turn.stubs[0].text.endswith(
        '>left out: too large to attach; context_open("stock") reads it whole</context-stub>'
    )
    # Instructions are never cut mid-text: not even their first words ride the turn.
    assert "Never sell" not in turn.stubs[0].text
    mute = shop.turn(role="mute")
    assert mute.stubs[0].text.endswith(">left out: too large to attach</context-stub>")


def test_a_turns_open_delivers_instructions_past_chars_as_context_open_does(
    open_shop: OpenShop,
) -> None:
    long_rules = "Never sell an item below cost. " * 10
    shop = open_shop(
        **{
            "features/shop/stock.context.md": (
                f"---\nwhen: [always]\ndata: [shop_stock]\nchars: 120\n---\n{long_rules}\n"
            )
        }
    )
    turn = shop.turn(role="clerk", open=(ReachEntry(context="stock"),))
    assert attached(turn) == [("stock", "ask")]
    assert turn.stubs == ()
    text = block(turn, "stock")
    assert long_rules.strip() in text, "the instructions, whole"
    assert re.fullmatch(
        r"\d+ rows, not shown: no room left in this context", view_stub(text, "shop_stock")
    )
    with shop.store.transaction() as tx:
        request = TurnRequest(conversation=SHOP, now=NOW, role="clerk")
        assert open_context(shop.brain, tx, request, ReachEntry(context="stock")) == text


def test_past_max_active_the_weakest_links_are_stubbed(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(max_active=1)})
    turn = shop.turn(role="clerk", run=RESTOCK, open=(ReachEntry(context="notes"),))
    assert attached(turn) == [("restock", "run")]
    assert stubs(turn) == [
        ("notes", "ask", "contexts.maxActive"),
        ("stock", "always", "contexts.maxActive"),
    ]
    for stub in turn.stubs:
        assert f'left out for room; context_open("{stub.link.context}") reads it' in stub.text
        assert "maxActive" not in stub.text


def test_past_turn_chars_the_weakest_link_is_stubbed(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(turn_chars=600)})
    turn = shop.turn(role="clerk", run=RESTOCK, open=(ReachEntry(context="notes"),))
    assert attached(turn) == [("restock", "run"), ("notes", "ask")]
    assert sum(a.block.chars for a in turn.attached) <= 600
    assert stubs(turn) == [("stock", "always", "contexts.turnChars")]
    assert 'context_open("stock") reads it' in turn.stubs[0].text


@pytest.mark.parametrize(
    ("knobs", "knob"),
    [
        pytest.param({"max_active": 1}, "contexts.maxActive", id="maxActive"),
        pytest.param({"turn_chars": 400}, "contexts.turnChars", id="turnChars"),
    ],
)
def test_a_role_without_context_read_is_told_only_that_it_was_left_out(
    open_shop: OpenShop, knobs: dict[str, int], knob: str
) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(**knobs)})
    turn = shop.turn(role="mute", run=RESTOCK)
    assert attached(turn) == [("restock", "run")]
    assert stubs(turn) == [("stock", "always", knob)]
    assert turn.stubs[0].text.endswith(">left out for room</context-stub>")
    assert knob not in turn.stubs[0].text, "the knob is for the operator"
    assert turn.catalog == ()


def test_the_nearest_tier_wins_each_knob(open_shop: OpenShop) -> None:
    # MANIFEST allows one context; the role's own budget allows three.
    shop = open_shop(
        **{
            "constitution/MANIFEST.yaml": manifest(max_active=1),
            "features/shop/clerk.agent.md": role("[context:read]", "{ maxActive: 3 }"),
        }
    )
    turn = shop.turn(role="clerk", run=RESTOCK, open=(ReachEntry(context="notes"),))
    assert attached(turn) == [("restock", "run"), ("notes", "ask"), ("stock", "always")]
    assert turn.stubs == ()


def test_the_ledger_records_what_attached_and_what_was_stubbed(open_shop: OpenShop) -> None:
    shop = open_shop(**{"constitution/MANIFEST.yaml": manifest(max_active=2)})
    turn = shop.turn(role="clerk", run=RESTOCK, open=(ReachEntry(context="notes"),))
    with shop.store.transaction() as tx:
        entries = tx.ledger(role="clerk")
    recorded = [(e.turn, e.context, e.feature, e.link, e.entity, e.chars, e.knob) for e in entries]
    sizes = {a.link.context: a.block.chars for a in turn.attached}
    assert sorted(recorded) == sorted(
        [
            (1, "restock", "shop", "run", None, sizes["restock"], None),
            (1, "notes", "shop", "ask", None, sizes["notes"], None),
            (1, "stock", "shop", "always", None, 0, "contexts.maxActive"),
        ]
    )
    assert all(e.conversation == SHOP and e.at == NOW for e in entries)


@pytest.mark.parametrize(
    ("request_fields", "error", "match"),
    [
        pytest.param(
            {"role": "clerk", "run": RunRef(kind="scenario", id="refill"), "entity": "sku-01"},
            LinkError,
            r"entity 'sku-01' needs exactly one keyed context .* found 0 \(none\)",
            id="an-entity-no-reach-can-take",
        ),
        pytest.param(
            {"role": "clerk", "run": RESTOCK, "entity": "sku-01"},
            LinkError,
            r"is a schedule, not one entity",
            id="a-key-on-a-heartbeat-tick",
        ),
        pytest.param({"role": "keeper"}, UsageError, r"no role 'keeper'", id="an-unknown-role"),
    ],
)
def test_a_refused_turn_writes_nothing(
    open_shop: OpenShop, request_fields: dict[str, object], error: type[KeelError], match: str
) -> None:
    shop = open_shop(
        **{
            "features/shop/restock/refill.scenario.md": "---\nagent: clerk\n---\nRefill the shelves.\n",
        }
    )
    first = shop.turn(role="clerk", open=(ReachEntry(context="notes"),))
    assert first.turn == 1
    with shop.store.transaction() as tx:
        kept_before = tx.kept(SHOP)
        ledger_before = tx.ledger()
    assert [k.context for k in kept_before] == ["notes"]

    with pytest.raises(error, match=match):
        shop.turn(**request_fields)

    assert shop.current_turn() == 1
    with shop.store.transaction() as tx:
        assert tx.kept(SHOP) == kept_before
        assert tx.ledger() == ledger_before
    assert shop.turn(role="clerk").turn == 2
