"""`keel report`, `keel context`, `keel explain`, `keel what-if`, and `keel turn --dry-run`:
their JSON shapes, their tables at 80 columns, and what they leave recorded (nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from keel.cli import app
from tests.runtime.driver import AT, Keel, keel_on

SHOPPER = ("--bot", "desk", "--chat", "tg:user:42")
OTHER = ("--bot", "desk", "--chat", "tg:user:43")
ACME = "tg:chat:-1002000000101"
FORUM = "tg:chat:-1003000000001"
WINDOW = ("--since", "2026-11-29T00:00:00Z", "--now", "2026-11-30T00:00:00Z")
# Five tickets linked by code: support's maxActive is 4, so one becomes a stub.
TICKETS = tuple(arg for n in range(479, 484) for arg in ("--attach", f"ticket=T-{n}"))


@pytest.fixture
def keel(tmp_path: Path, sqlite_url: str) -> Keel:
    return keel_on(tmp_path, sqlite_url)


def shown(keel: Keel, command: str, *args: str, fits: bool = True) -> str:
    """What a command prints for people at 80 columns; every line fits (if `fits`)."""
    words = command.split()
    result: Result = CliRunner().invoke(
        app,
        [*words, str(keel.brain), *args, "--db", keel.db],
        env={"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"},
    )
    assert result.exit_code == 0, result.output
    wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not (fits and wide), wide
    return result.stdout


def play(keel: Keel) -> list[int]:
    """Three support turns: policy opened then held; in another chat, a ticket stubbed."""
    return [
        keel.turn(*SHOPPER, "--open", "policy", "--input", "earrings?").data["id"],
        keel.turn(*SHOPPER, "--input", "thanks").data["id"],
        keel.turn(*OTHER, *TICKETS, "--input", "my orders?").data["id"],
    ]


def test_turn_prints_its_id_and_a_dry_run_records_nothing(keel: Keel) -> None:
    dry = keel.turn(*SHOPPER, "--open", "policy", "--input", "hello", "--dry-run")
    assert (dry.data["id"], dry.data["dry_run"], dry.number) == (None, True, 1)
    assert dry.pairs == [("policy", None, "ask")]
    assert keel.json("turns") == {"turns": []}
    assert keel.json("history", "--chat", "tg:user:42") == {"messages": []}
    assert keel.json("context", "--chat", "tg:user:42") is None
    real = keel.turn(*SHOPPER, "--input", "hello")
    assert (real.number, real.data["dry_run"], real.pairs) == (1, False, [])  # no kept open
    assert [t["id"] for t in keel.json("turns")["turns"]] == [real.data["id"]]
    out = shown(keel, "turn", *SHOPPER, "--dry-run", "--at", AT, fits=False)
    assert out.startswith("dry run: nothing was recorded\nturn 2 · role support\n")
    assert len(keel.json("turns")["turns"]) == 1


def test_report_counts_each_context_of_the_roles_turns(keel: Keel) -> None:
    play(keel)
    data = keel.json("report", "--role", "support", *WINDOW)
    assert (data["role"], data["turns"]) == ("support", 3)
    assert (data["since"], data["until"]) == (
        "2026-11-29T00:00:00+00:00",
        "2026-11-30T00:00:00+00:00",
    )
    by = {c["context"]: c for c in data["contexts"]}
    assert list(by) == ["policy", "ticket", "kb"]  # most turns attached first
    assert by["ticket"]["attached"] == 1
    assert (by["ticket"]["stubbed"], by["ticket"]["stubbed_by"]) == (1, {"contexts.maxActive": 1})
    assert by["ticket"]["links"] == {"code": 5}
    assert (by["policy"]["attached"], by["policy"]["offered"], by["policy"]["opened"]) == (2, 3, 2)
    assert by["kb"] == {
        "context": "kb",
        "feature": None,
        "attached": 0,
        "stubbed": 0,
        "stubbed_by": {},
        "mean_chars": 0,
        "max_chars": 0,
        "links": {},
        "offered": 3,
        "opened": 0,
    }
    out = shown(keel, "report", "--role", "support", *WINDOW)
    assert out.startswith("role support · 3 turns from 2026-11-29 00:00 to 2026-11-30 00:00 UTC\n")
    assert "ticket   1      1 (maxActive 1)" in out
    empty = keel.json("report", "--role", "coach", *WINDOW)
    assert (empty["turns"], empty["contexts"]) == (0, [])
    error = keel.invoke("report", "--role", "suport")
    assert error.exit_code == 2
    assert "no role 'suport' in this brain — did you mean 'support'?" in error.stderr


def test_context_shows_the_latest_turn_the_window_and_what_is_kept(keel: Keel) -> None:
    ids = play(keel)
    data = keel.json("context", "--chat", "tg:user:42")
    assert set(data) == {
        "id", "bot", "chat", "thread", "turn", "role", "at", "contexts", "window", "sections", "kept",
    }  # fmt: skip
    assert (data["id"], data["turn"], data["bot"], data["role"]) == (ids[1], 2, "desk", "support")
    assert data["contexts"] == [
        {"context": "policy", "entity": None, "link": "kept",
         "kept": {"link": "ask", "from_turn": 1, "turns_left": 2}, "status": "attached",
         "chars": data["contexts"][0]["chars"], "knob": None},
    ]  # fmt: skip
    window = data["window"]
    assert (window["window"], window["reserved"], window["allocation"]) == (200000, 8000, 150000)
    assert window["free"] == 200000 - 8000 - window["used"]
    assert window["used"] > 0
    assert {s["id"] for s in data["sections"]} >= {"identity", "current", "context.policy"}
    assert data["kept"] == [
        {"context": "policy", "entity": None, "link": "ask", "until_turn": 4, "turns_left": 2}
    ]
    out = shown(keel, "context", "--chat", "tg:user:42", "--bot", "desk")
    assert f"turn 2 (id {ids[1]}) · bot desk · role support" in out
    assert "window █" in out
    assert "▒ 200,000" in out
    assert (
        f"used {window['used']:,} · free {window['free']:,} · reserved for output 8,000 (tokens"
        in out
    )
    assert "policy  ask   2" in out
    assert keel.json("context", "--chat", "tg:user:42", "--bot", "nova") is None
    assert shown(keel, "context", "--chat", "tg:nowhere") == "no recorded turn in tg:nowhere\n"


def test_explain_a_recorded_turn_or_the_turn_the_flags_describe(keel: Keel) -> None:
    ids = play(keel)
    data = keel.json("explain", str(ids[2]))
    assert (data["id"], data["turn"], data["role"], data["dry_run"]) == (
        ids[2],
        1,
        "support",
        False,
    )
    rows = {(r["context"], r["entity"]): r for r in data["contexts"]}
    assert rows[("ticket", "T-483")]["status"] == "stubbed"
    assert rows[("ticket", "T-483")]["knob"] == "contexts.maxActive"
    assert rows[("policy", None)]["reason"] == "offered in the catalog, not opened"
    assert set(rows[("policy", None)]) == {
        "context", "feature", "status", "entity", "link", "kept", "chars", "knob", "reason",
    }  # fmt: skip
    dry = keel.json("explain", "--bot", "nova", "--chat", ACME, "--open", "client=globex")
    assert (dry["id"], dry["dry_run"], dry["turn"]) == (None, True, 1)
    statuses = {(r["context"], r["entity"]): r["status"] for r in dry["contexts"]}
    assert statuses[("client", "acme")] == "attached"
    assert statuses[("client", "globex")] == "refused"
    assert keel.json("turns", "--chat", ACME) == {"turns": []}
    out = shown(keel, "explain", str(ids[2]))
    assert f"turn 1 (id {ids[2]}) · role support" in out
    assert "ticket@T-483  stubbed" in out
    missing = keel.invoke("explain", "999")
    assert missing.exit_code == 2
    assert (
        "no turn 999 in the journal — `keel turns BRAIN` lists the recorded turns" in missing.stderr
    )


def test_explain_says_which_link_each_refusal_of_one_pair_was(keel: Keel) -> None:
    both = ("--open", "client=globex", "--attach", "client=globex", "--input", "hi")
    turn = keel.turn("--bot", "nova", "--chat", ACME, *both)
    data = keel.json("explain", str(turn.data["id"]))
    refused = sorted(
        (r["link"], r["reason"])
        for r in data["contexts"]
        if (r["context"], r["entity"], r["status"]) == ("client", "globex", "refused")
    )
    assert [link for link, _ in refused] == ["ask", "code"]
    assert refused[0][1].endswith("— ask without a key to read 'acme'")
    assert refused[1][1].endswith(
        "— attach it without a key to read 'acme', or take 'globex' to a room of its own"
    )
    out = " ".join(shown(keel, "explain", str(turn.data["id"])).split())
    assert "client@globex refused ask link: this chat is bound to client 'acme';" in out
    assert "client@globex refused code link: this chat is bound to client 'acme';" in out


def test_explain_names_another_bots_binding_of_the_thread(keel: Keel) -> None:
    keel.json(
        "bind", "--context", "ticket", "--entity", "T-480", "--chat", FORUM, "--thread", "t-900",
        "--bot", "nova", "--role", "support",
    )  # fmt: skip
    topic = ("--bot", "desk", "--chat", FORUM, "--thread", "t-900")
    hello = keel.turn(*topic, "--input", "hi").data["id"]
    note = (
        "'ticket' is pinned to 'T-480' in thread t-900 by bot 'nova' (a context_bind call): it "
        "attaches to that bot's turns only, and holds this bot's links there to 'T-480'"
    )
    rows = {(r["context"], r["entity"]): r for r in keel.json("explain", str(hello))["contexts"]}
    assert rows[("ticket", None)]["reason"] == f"its brain code answered no; {note}"
    out = " ".join(shown(keel, "explain", str(hello)).split())
    assert f"ticket not linked its brain code answered no; {note}" in out
    about = keel.turn(*topic, "--input", "about T-481")
    (refused,) = about.refused
    assert refused["reason"].startswith(
        "thread t-900 is bound to ticket 'T-480' by bot 'nova'; 'T-481' belongs to another entity"
    )
    rows = {
        (r["context"], r["entity"]): r
        for r in keel.json("explain", str(about.data["id"]))["contexts"]
    }
    assert rows[("ticket", "T-481")]["reason"] == refused["reason"]
    assert rows[("ticket", "T-481")]["link"] == "code"


def test_what_if_shows_each_context_before_and_after_and_records_nothing(keel: Keel) -> None:
    play(keel)
    data = keel.json("what-if", *WINDOW, "--set", "role.support.contexts_budget.maxActive=5")
    assert set(data) == {"set", "since", "turns", "contexts", "per_turn"}
    assert (data["set"], data["turns"]) == (["role.support.contexts_budget.maxActive=5"], 3)
    ticket = {c["context"]: c for c in data["contexts"]}["ticket"]
    assert ticket == {
        "context": "ticket",
        "attached": {"before": 4, "after": 5},
        "stubbed": {"before": 1, "after": 0},
        "stubbed_by": {"before": {"contexts.maxActive": 1}, "after": {}},
    }
    assert [t["changed"] for t in data["per_turn"]] == [[], [], ["ticket@T-483"]]
    first = data["per_turn"][2]
    assert first["notes"] == ["ticket@T-483: the turn did not read its views; read as they are now"]
    assert first["fit"]["replayed"] is True
    assert first["fit"]["after"]["estimate"] > first["fit"]["before"]["estimate"]
    out = shown(keel, "what-if", *WINDOW, "--set", "role.support.contexts_budget.maxActive=5")
    assert "ticket   4 → 5     1 → 0" in out
    assert "note: turn 3: ticket@T-483: the turn did not read its views" in out
    assert len(keel.json("turns")["turns"]) == 3
    error = keel.invoke("what-if", "--set", "contexts.maxActiv=5")
    assert error.exit_code == 2
    assert "unknown knob 'contexts.maxActiv'" in error.stderr
