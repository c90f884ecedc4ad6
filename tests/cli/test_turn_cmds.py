"""`keel turn`, `keel send`, `keel state apply` from the command line: shapes and exit codes.

Exit status: 0 done, 2 a usage error (one line on stderr), 3 a refusal (`{"refused": ...}`
with --json). Runs on a copy of the reference brain with its own SQLite file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.runtime.driver import Keel, keel_on

OWNER = "tg:user:1"
FAMILY = "tg:chat:-1001000000001"
ACME = "tg:chat:-1002000000101"
SHOPPER = "tg:user:42"


@pytest.fixture
def keel(tmp_path: Path, sqlite_url: str) -> Keel:
    return keel_on(tmp_path, sqlite_url)


def test_turn_json_has_exactly_its_keys(keel: Keel) -> None:
    # Five tickets linked by code: support's maxActive is 4, so one becomes a stub.
    tickets = [arg for n in range(479, 484) for arg in ("--attach", f"ticket=T-{n}")]
    data = keel.json(
        "turn",
        "--bot",
        "desk",
        "--chat",
        SHOPPER,
        *tickets,
        "--open",
        "client=acme",
        "--input",
        "hi",
    )
    assert set(data) == {
        "id",
        "dry_run",
        "engage",
        "turn",
        "role",
        "attached",
        "stubbed",
        "refused",
        "catalog",
        "blocks",
        "sections",
        "fit",
        "counter",
        "warnings",
        "bot",
        "chat",
        "thread",
        "sender",
    }
    assert (data["bot"], data["chat"], data["thread"]) == ("desk", SHOPPER, None)
    assert [set(s) for s in data["sections"]] == [
        {"id", "text", "budget_tokens", "used_tokens", "clipped", "warnings"}
    ] * len(data["sections"])
    assert set(data["fit"]) == {"ok", "estimate", "window", "output_reserve", "input_allocation"}
    assert data["turn"] == 1
    assert data["role"] == "support"
    assert [set(a) for a in data["attached"]] == [
        {"context", "feature", "entity", "link", "kept", "chars"}
    ] * 4
    assert [a["kept"] for a in data["attached"]] == [None] * 4  # each made this turn
    assert [set(s) for s in data["stubbed"]] == [
        {"context", "entity", "link", "kept", "knob", "text"}
    ]
    assert [set(r) for r in data["refused"]] == [{"context", "entity", "link", "reason"}]
    assert [set(c) for c in data["catalog"]] == [{"context", "description"}] * 3
    assert [set(b) for b in data["blocks"]] == [{"context", "entity", "text"}] * 4
    assert [b["entity"] for b in data["blocks"]] == [a["entity"] for a in data["attached"]]
    assert [len(b["text"]) for b in data["blocks"]] == [a["chars"] for a in data["attached"]]
    assert data["stubbed"][0]["knob"] == "contexts.maxActive"


def test_send_json_has_the_message_id_and_its_origin(keel: Keel) -> None:
    given = keel.json(
        "send",
        "--bot",
        "nova",
        "--chat",
        OWNER,
        "--text",
        "Tonight: Inception",
        "--run",
        "heartbeat:evening-film",
        "--about-entity",
        "tt1375666",
        "--message-id",
        "film-1",
    )
    assert {"message_id", "origin"} <= set(given)
    assert given["message_id"] == "film-1"
    assert set(given["origin"]) == {"feature", "reach"}
    assert given["origin"]["feature"] == "coach"
    assert all(set(entry) == {"context", "entity"} for entry in given["origin"]["reach"])

    fresh = keel.json("send", "--bot", "nova", "--chat", OWNER, "--text", "Done.")
    assert re.fullmatch(r"[0-9a-f]{32}", fresh["message_id"])
    assert fresh["origin"] == {"feature": None, "reach": []}


def joined(text: str) -> str:
    """Printed prose with the terminal's line breaks taken out again."""
    return " ".join(line.strip() for line in text.splitlines())


@pytest.mark.parametrize(
    ("command", "args", "reason"),
    [
        pytest.param(
            "send",
            ["--bot", "nova", "--chat", OWNER, "--text", "x", "--run", "heartbeat:evening-film"],
            r'the message would lose its origin: .*"rating" \(keyed by film id\)',
            id="send-without-about",
        ),
        pytest.param(
            "turn",
            ["--role", "coach", "--run", "heartbeat:evening-film", "--entity", "tt1375666"],
            r"heartbeat:evening-film is a schedule, not one entity",
            id="a-key-on-a-heartbeat",
        ),
        pytest.param(
            "turn",
            [
                "--role",
                "sdr",
                "--run",
                "scenario:first-touch",
                "--entity",
                "p_912",
                "--reach",
                "offer",
            ],
            r"entity 'p_912' needs exactly one keyed context .* found 0 \(none\)",
            id="an-entity-no-reach-can-take",
        ),
    ],
)
def test_a_refusal_exits_3_with_the_reason(
    keel: Keel, command: str, args: list[str], reason: str
) -> None:
    as_json = keel.invoke(command, *args)
    assert as_json.exit_code == 3, as_json.output
    data = json.loads(as_json.stdout)
    assert set(data) == {"refused"}
    assert re.search(reason, data["refused"]), data

    human = keel.invoke(command, *args, json_out=False)
    assert human.exit_code == 3, human.output
    assert human.stdout.startswith("refused: ")
    assert re.search(reason, joined(human.stdout)), human.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--role", "coach", "--run", "heartbeat"],
            r"--run 'heartbeat': write KIND:ID",
            id="run-without-id",
        ),
        pytest.param(
            ["--role", "coach", "--run", "cron:daily"],
            r"--run 'cron:daily': write KIND:ID",
            id="run-of-unknown-kind",
        ),
        pytest.param(
            ["--role", "coach", "--run", "heartbeat:evening-flim"],
            r"no heartbeat 'evening-flim' .*did you mean 'evening-film'\?",
            id="run-of-unknown-entity",
        ),
        pytest.param(
            ["--role", "coach", "--run", "heartbeat:evening-film", "--reach", "pick,=f_1"],
            r"--reach '=f_1': write CTX or CTX=KEY",
            id="bad-reach",
        ),
        pytest.param(
            ["--role", "coahc"], r"no role 'coahc' .*did you mean 'coach'\?", id="unknown-role"
        ),
        pytest.param(
            ["--role", "coach", "--entity", "tt1375666"],
            r"an entity or reach needs a run — add --run KIND:ID",
            id="entity-without-run",
        ),
        pytest.param(
            ["--role", "coach", "--reach", "pick"],
            r"an entity or reach needs a run",
            id="reach-without-run",
        ),
        pytest.param(
            ["--role", "coach", "--open", "rating="], r"--open 'rating=': write CTX", id="bad-open"
        ),
        pytest.param(
            ["--bot", "nobody", "--chat", "nowhere"],
            r"no role given and access\.yaml has no rule .* — name a role \(--role on the command line",
            id="no-role-and-no-rule",
        ),
        pytest.param(
            ["--bot", "dsek", "--chat", "nowhere"],
            r"for bot 'dsek' in chat 'nowhere' \(did you mean bot 'desk'\?\) — name a role",
            id="misspelt-bot",
        ),
    ],
)
def test_a_usage_error_exits_2_with_one_line(
    keel: Keel, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    # A usual terminal width: the message must not depend on it.
    monkeypatch.setenv("COLUMNS", "80")
    result = keel.invoke("turn", *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("error: ") == 1, result.stderr
    assert all(len(line) <= 80 for line in result.stderr.splitlines()), "wrapped at the width"
    assert re.search(message, joined(result.stderr)), result.stderr


def test_a_misspelt_role_in_access_yaml_names_its_line(keel: Keel) -> None:
    access = keel.brain / "constitution" / "access.yaml"
    text = access.read_text(encoding="utf-8").replace("{ role: support }", "{ role: suport }")
    access.write_text(text, encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "suport" in row)
    result = keel.invoke("turn", "--bot", "desk", "--chat", SHOPPER)
    assert result.exit_code == 2, result.output
    assert (
        "no role 'suport' in this brain — did you mean 'support'? (given at "
        f"constitution/access.yaml:{line} — fix the name there)"
    ) in joined(result.stderr)


def test_a_usage_error_records_no_turn(keel: Keel) -> None:
    assert keel.invoke("turn", "--role", "coahc").exit_code == 2
    assert keel.json("turn", "--role", "coach")["turn"] == 1


@pytest.mark.parametrize(
    ("args", "role"),
    [
        pytest.param(["--bot", "nova", "--chat", OWNER], "bookkeeper", id="bot-default-rule"),
        pytest.param(["--bot", "nova", "--chat", OWNER, "--dm"], "coach", id="dm-rule"),
        pytest.param(["--bot", "nova", "--chat", FAMILY], "family", id="group-rule"),
        pytest.param(
            ["--bot", "nova", "--chat", FAMILY, "--dm"], "family", id="group-rule-over-dm"
        ),
        pytest.param(
            ["--bot", "desk", "--chat", SHOPPER, "--dm"], "sdr", id="another-bots-dm-rule"
        ),
        pytest.param(
            ["--bot", "nova", "--chat", FAMILY, "--role", "coach"], "coach", id="named-role"
        ),
    ],
)
def test_the_role_comes_from_access_yaml_unless_named(
    keel: Keel, args: list[str], role: str
) -> None:
    assert keel.turn(*args).role == role


def test_the_human_output_names_what_attached_and_prints_the_blocks(keel: Keel) -> None:
    result = keel.invoke(
        "turn", "--bot", "nova", "--chat", ACME, "--open", "client=globex", json_out=False
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "turn 1 · role client-desk" in out
    assert re.search(r"client\s+acme\s+chat\s+\d+\s+attached", out), out
    assert re.search(
        r"client\s+globex\s+ask\s+refused: this chat is bound to client 'acme'", out
    ), out
    assert "- client: This client's account" in out
    assert '<context name="client" entity="acme">' in out
    assert "acme | Acme Corporation | Wile Coyote" in out


def test_the_human_output_of_a_turn_with_no_links_says_so(keel: Keel) -> None:
    result = keel.invoke("turn", "--bot", "nova", "--chat", OWNER, "--dm", json_out=False)
    assert result.exit_code == 0, result.output
    assert "no feature contexts linked to this turn" in result.stdout


def test_state_apply_fills_a_new_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{(tmp_path / 'fresh.db').as_posix()}"
    keel = keel_on(tmp_path, url)
    applied = keel.invoke("state apply")
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["applied"][0] == "state/10_billing.sql"
    turn = keel.turn("--bot", "nova", "--chat", FAMILY)
    assert sorted(turn.column("shopping", "home_shopping_open")) == ["1", "3", "4", "5"]


def test_attach_and_open_take_a_comma_list_like_reach(keel: Keel) -> None:
    def pairs(*flags: str) -> list[tuple[str, str, str]]:
        data = keel.json("turn", "--bot", "desk", "--chat", SHOPPER, *flags, "--input", "hi")
        return [(a["context"], a["entity"], a["link"]) for a in data["attached"]]

    listed = pairs("--attach", "ticket=T-479, ticket=T-480", "--open", "client=acme")
    repeated = pairs(
        "--attach", "ticket=T-479", "--attach", "ticket=T-480", "--open", "client=acme"
    )
    assert listed == repeated
    assert ("ticket", "T-480", "code") in listed
    bad = keel.invoke("turn", "--attach", "ticket=T-1,=x")
    assert bad.exit_code == 2
    assert "--attach '=x': write CTX or CTX=KEY" in bad.output


def test_a_run_turn_speaks_where_the_run_speaks_unless_told(keel: Keel) -> None:
    # morning-plan's frontmatter: bot nova, chat tg:user:1 — as `keel run` would speak.
    data = keel.json("turn", "--run", "heartbeat:morning-plan")
    assert (data["bot"], data["chat"], data["role"]) == ("nova", "tg:user:1", "coach")
    given = keel.json("turn", "--run", "heartbeat:morning-plan", "--chat", "tg:user:9")
    assert (given["bot"], given["chat"]) == ("nova", "tg:user:9")
    plain = keel.json("turn", "--role", "coach")
    assert (plain["bot"], plain["chat"]) == ("cli", "cli")


def small_client(brain: Path) -> None:
    """Give `client` a `chars` its instructions alone pass."""
    path = brain / "features" / "agency" / "client.context.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("entity: client slug", "entity: client slug\nchars: 120"))


def test_an_open_past_its_chars_is_delivered_as_context_open_delivers_it(keel: Keel) -> None:
    small_client(keel.brain)
    flags = ["--bot", "nova", "--chat", SHOPPER, "--role", "client-desk", "--dry-run"]
    data = keel.json("turn", *flags, "--input", "hi", "--open", "client=acme")
    assert ("client", "acme", "ask") in [
        (a["context"], a["entity"], a["link"]) for a in data["attached"]
    ]
    assert "client" not in [s["context"] for s in data["stubbed"]]
    (text,) = [b["text"] for b in data["blocks"] if b["context"] == "client"]
    assert "You are in this client's own room." in text
    assert "say you cannot discuss it." in text  # the instructions, whole
    assert "1 row, not shown: no room left in this context" in text
    assert "Acme Corporation" not in text
    # Not opened, it is a stub that says opening it by name delivers it.
    left = keel.json("turn", "--bot", "nova", "--chat", ACME, "--input", "hi", "--dry-run")
    assert [(s["context"], s["knob"], s["text"]) for s in left["stubbed"]] == [
        (
            "client",
            "chars",
            '<context-stub name="client" entity="acme">left out: too large to attach; '
            'context_open("client", "acme") reads it whole</context-stub>',
        )
    ]


def test_an_open_of_a_context_a_stronger_link_carries_still_delivers_it(keel: Keel) -> None:
    small_client(keel.brain)
    flags = ["--bot", "nova", "--chat", ACME, "--input", "hi", "--dry-run"]
    data = keel.json("turn", *flags, "--open", "client")
    # The chat's binding carries it (and ranks it); the open still delivers it whole.
    assert [(a["context"], a["entity"], a["link"]) for a in data["attached"]] == [
        ("client", "acme", "chat")
    ]
    assert data["stubbed"] == []
    (text,) = [b["text"] for b in data["blocks"]]
    assert "say you cannot discuss it." in text
    assert "1 row, not shown: no room left in this context" in text
