"""The reference brain's runs, end to end through the command line, with scripted models.

Every worked example of `examples/brain` that is a run (its README's table) is started as
a person would start it — `keel run`, `keel fire`, `keel scenario`, `keel approve` — and
what it left behind is read back the same way: `keel messages`, `keel bindings`, and a
`keel turn` replying to what the run posted, which shows the contexts the reply brought
back. Each test runs once on SQLite and once on PostgreSQL.

The brain is a copy: inside the project's git repository a run would pin the last commit
and read the examples as committed, not as they are in the working tree.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keel.brain import load_brain
from tests.runs.conftest import DATABASES, Runs, launched_on

BRAIN_DIR = Path(__file__).resolve().parents[2] / "examples" / "brain"

OWNER = "tg:user:1"  # the owner's direct chat with nova (and with desk, largo)
LEARNER = "tg:user:2"  # the learner's chat with the Dutch tutor
BOOKS = "tg:chat:-1004000000001"  # the owner's bookkeeping group
FORUM = "tg:chat:-1003000000001"  # the support forum, one topic per ticket
PROSPECT_CHAT = "tg:user:5513001"  # Lars Meijer of Quayside Foods, prospect p_913
PRACTICES = ("knm", "listen", "write", "read")

# Every run of the brain, each covered by a test below.
COVERED = {
    "heartbeat:invoice-chase",
    "heartbeat:evening-film",
    "heartbeat:morning-plan",
    "heartbeat:morning-checkin",
    "heartbeat:film-of-day",
    "hook:skip",
    "hook:ticket-opened",
    "scenario:first-touch",
    "hook:knm-practice-knm-exam-booked",
    *(f"scenario:{practice}-practice" for practice in PRACTICES),
}


@pytest.fixture(
    scope="module",
    params=DATABASES,
)
def example(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    """The reference brain, copied, on one database, with this process's runtime on it."""
    folder = tmp_path_factory.mktemp("example-runs")
    brain = folder / "brain"
    shutil.copytree(BRAIN_DIR, brain, ignore=shutil.ignore_patterns(".keel"))
    yield from launched_on(request.param, brain, folder)


# -- reading what a run left -----------------------------------------------------------------


def attached(turn: dict[str, Any], link: str | None = None) -> list[tuple[str, str | None, str]]:
    """A turn's attached contexts as (context, entity, link), only those of `link` if named."""
    found = [(a["context"], a["entity"], a["link"]) for a in turn["attached"]]
    return [f for f in found if link is None or f[2] == link]


def text_of(turn: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in turn["blocks"])


def steps(record: dict[str, Any]) -> list[str]:
    return [s["name"] for s in record["steps"]]


def sent_in(example: Runs, chat: str) -> dict[str, dict[str, Any]]:
    """What `keel messages` lists for a chat, by message id."""
    listed = example.json("messages", "--chat", chat)["messages"]
    return {m["message_id"]: m for m in listed}


def reply(
    example: Runs, bot: str, chat: str, message_id: str, text: str, *extra: str
) -> dict[str, Any]:
    """A person's reply to a message the run sent: the turn it makes (`extra`: more flags,
    such as `--dm` for a direct chat)."""
    turn: dict[str, Any] = example.json(
        "turn", "--bot", bot, "--chat", chat, "--reply-to", message_id, "--input", text, *extra
    )
    return turn


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_every_run_of_the_reference_brain_is_covered_here() -> None:
    brain = load_brain(BRAIN_DIR)
    runs = {e.key for e in brain.entities.values() if e.kind in ("heartbeat", "hook", "scenario")}
    assert runs == COVERED


# -- the invoice chase: a run-only context --------------------------------------------------


def test_the_invoice_chase_posts_with_its_origin_and_a_reply_finds_it_without_the_view(
    example: Runs,
) -> None:
    draft = "Reminder drafted for 2025-034; 2025-031 is 41 days late and needs your OK."
    model = example.script("chase", [{"text": draft}])
    record = example.json("run", "heartbeat:invoice-chase", "--model", model)
    assert (record["status"], record["role"], record["bot"], record["chat"]) == (
        "done", "bookkeeper", "nova", BOOKS,
    )  # fmt: skip
    assert steps(record) == ["start", "prepare", "request", "send", "finish"]
    [turn] = record["turns"]
    assert attached(turn) == [("chase", None, "run")]
    assert "2025-031 | Brightline Studio" in text_of(turn)  # the overdue view rode the beat
    [message] = record["messages"]
    assert message["text"] == draft
    origin = {
        "feature": "billing",
        "run": "heartbeat:invoice-chase",
        "reach": [{"context": "chase", "entity": None}],
        "pending_card": False,
        "widget": None,
    }
    assert message["origin"] == origin
    assert sent_in(example, BOOKS)[message["message_id"]]["origin"] == origin
    # A reply brings back what the post's reach holds for replies. `chase` is for runs only
    # (and the bookkeeper does not list it): the owner's chat stays without the view. That
    # the reply found the post shows in what a reply to an unknown message gets instead.
    answer = reply(example, "nova", BOOKS, message["message_id"], "Send the Kettle one.")
    assert answer["role"] == "bookkeeper"
    assert (attached(answer), answer["warnings"]) == ([], [])
    assert "Brightline" not in text_of(answer)
    stranger = reply(example, "nova", BOOKS, "no-such-message", "And this?", "--dry-run")
    assert stranger["warnings"] == [
        "reply to no-such-message: not a message this bot sent here, links nothing"
    ]


# -- the coach: layout reach, the pick, then the rating reply keyed by the film -------------


def test_the_evening_film_picks_from_the_candidates_and_the_rating_comes_back_keyed(
    example: Runs,
) -> None:
    post = tool_call(
        "send_message", text="Tonight: Whiplash (106 min).", about={"entity": "tt2582802"}
    )
    model = example.script("film", [post, {"text": "Posted."}])
    record = example.json("run", "heartbeat:evening-film", "--model", model)
    assert (record["status"], record["role"]) == ("done", "coach")
    assert record["reach"] == [
        {"context": "pick", "entity": None},
        {"context": "rating", "entity": None},
    ]
    assert steps(record) == ["start", "prepare", "request", "tool", "request", "finish"]
    [turn] = record["turns"]
    assert attached(turn) == [("pick", None, "run")]  # rating waits for a reply
    assert "tt2582802 | Whiplash" in text_of(turn)
    [message] = record["messages"]  # the agent posted; its closing line is not sent
    assert (message["chat"], message["text"]) == (OWNER, "Tonight: Whiplash (106 min).")
    assert message["origin"]["reach"] == [
        {"context": "pick", "entity": None},
        {"context": "rating", "entity": "tt2582802"},
    ]
    rating = reply(
        example, "nova", OWNER, message["message_id"], "8/10, loved the drumming", "--dm"
    )
    assert rating["role"] == "coach"
    assert attached(rating) == [("rating", "tt2582802", "reply")]
    assert "tt2582802 | Whiplash" in text_of(rating)
    assert "Amélie" not in text_of(rating)  # the film's own row, not the candidates


def test_an_evening_film_posted_without_its_key_is_refused(example: Runs) -> None:
    model = example.script("film-unkeyed", [{"text": "Tonight: Whiplash."}])
    record = example.json("run", "heartbeat:evening-film", "--model", model, exit_code=3)
    assert (record["status"], record["refused"], record["messages"]) == ("failed", True, [])
    assert '"rating" (keyed by film id)' in record["error"]


@pytest.mark.parametrize(
    ("beat", "bot", "reach"),
    [
        pytest.param("morning-plan", "nova", ["routine"], id="coach-morning-plan"),
        pytest.param("morning-checkin", "largo", ["checkin", "largo"], id="largo-checkin"),
    ],
)
def test_a_morning_beat_reaches_only_the_contexts_beside_and_above_it(
    example: Runs, beat: str, bot: str, reach: list[str]
) -> None:
    model = example.script(f"beat-{beat}", [{"text": "Good morning."}])
    record = example.json("run", f"heartbeat:{beat}", "--model", model)
    assert (record["status"], record["bot"], record["chat"]) == ("done", bot, OWNER)
    [turn] = record["turns"]
    assert attached(turn, "run") == [(c, None, "run") for c in reach]
    [message] = record["messages"]
    assert message["origin"]["reach"] == [{"context": c, "entity": None} for c in reach]


def test_largos_film_of_the_day_is_posted_keyed_and_a_reply_brings_that_film(
    example: Runs,
) -> None:
    post = tool_call("send_message", text="Tonight: Perfect Days.", about={"entity": "lf-003"})
    model = example.script("largo-film", [post, {"text": "Posted."}])
    record = example.json("run", "heartbeat:film-of-day", "--model", model)
    assert (record["status"], record["role"]) == ("done", "largo")
    [message] = record["messages"]
    assert message["origin"]["reach"] == [
        {"context": "film", "entity": "lf-003"},
        {"context": "largo", "entity": None},
    ]
    answer = reply(example, "largo", OWNER, message["message_id"], "Sounds lovely", "--dm")
    assert answer["role"] == "largo"
    assert ("film", "lf-003", "reply") in attached(answer)
    assert "lf-003 | Perfect Days" in text_of(answer)


# -- the Dutch coach: four practices, one gated skip hook -----------------------------------


@pytest.mark.parametrize("practice", PRACTICES)
def test_each_practice_posts_the_coachs_task_and_a_reply_brings_that_practice_back(
    example: Runs, practice: str
) -> None:
    # Each practice posts to a chat of its own (the pipelines take `chat` from vars), so a
    # reply there carries only what that post brings back.
    chat = f"tg:user:2{PRACTICES.index(practice)}"
    task = f"Vandaag: {practice}. Veel succes!"
    model = example.script(f"practice-{practice}", [{"text": task}])
    record = example.json(
        "scenario", f"{practice}-practice", "--vars", json.dumps({"chat": chat}), "--model", model
    )
    assert (record["status"], record["role"], record["bot"]) == ("done", "dutch-coach", "tutor")
    assert record["reach"] == [{"context": practice, "entity": None}]
    assert steps(record) == ["start", "prepare", "request", "send", "finish"]
    [turn] = record["turns"]
    assert attached(turn, "run") == [(practice, None, "run")]
    [message] = record["messages"]
    assert (message["chat"], message["text"]) == (chat, task)
    assert message["origin"]["run"] == f"scenario:{practice}-practice"
    answer = reply(example, "tutor", chat, message["message_id"], "Klaar!", "--dm")
    assert answer["role"] == "dutch-coach"
    assert attached(answer) == [(practice, None, "reply")]


def test_the_skip_hook_reaches_the_practice_its_event_names(example: Runs) -> None:
    model = example.script("skip-read", [{"text": "Geen probleem. Later vijf minuten lezen?"}])
    payload = json.dumps({"skill": "read"})
    [fired] = example.json("fire", "practice.skipped", "--payload", payload, "--model", model)[
        "runs"
    ]
    assert (fired["run"], fired["status"], fired["bot"], fired["chat"]) == (
        "hook:skip", "done", "tutor", LEARNER,
    )  # fmt: skip
    assert fired["reach"] == [{"context": "read", "entity": None}]
    [turn] = fired["turns"]
    assert attached(turn, "run") == [("read", None, "run")]
    [message] = fired["messages"]
    assert message["origin"]["reach"] == [{"context": "read", "entity": None}]
    answer = reply(example, "tutor", LEARNER, message["message_id"], "OK, later vandaag", "--dm")
    assert ("read", None, "reply") in attached(answer)
    assert [a for a in attached(answer, "reply") if a[0] in PRACTICES] == [("read", None, "reply")]


def test_a_skip_event_naming_no_practice_keeps_the_hooks_own_empty_reach(example: Runs) -> None:
    model = example.script("skip-none", [{"text": "Geen probleem."}])
    [fired] = example.json("fire", "practice.skipped", "--payload", "{}", "--model", model)["runs"]
    assert (fired["status"], fired["reach"]) == ("done", [])  # the hook sits at the root
    [turn] = fired["turns"]
    assert attached(turn, "run") == []
    [message] = fired["messages"]
    assert message["origin"]["reach"] == []


def test_a_skip_event_naming_an_unknown_practice_fails_the_fire(example: Runs) -> None:
    payload = json.dumps({"skill": "cooking"})
    [fired] = example.json(
        "fire", "practice.skipped", "--payload", payload, "--model", "none", exit_code=1
    )["runs"]
    assert (fired["status"], fired["messages"]) == ("failed", [])
    assert "features/dutch/skip.hook.py" in fired["error"]
    assert "'cooking', which is not in this brain" in fired["error"]


# -- the support desk: the ticket-opened hook binds the topic --------------------------------


def test_the_ticket_opened_hook_binds_its_topic_to_the_ticket(example: Runs) -> None:
    bind = tool_call("context_bind", context="ticket", entity="T-481", thread="t-481")
    model = example.script("ticket", [bind, {"text": "Hi Maria, this topic is for T-481."}])
    payload = json.dumps({"ticket": "T-481", "subject": "Broken lamp", "customer": "Maria"})
    # The event's topic comes in as the run's thread. `--bot` too: with `--chat` alone the
    # run would speak as `cli`, not as the hook's own bot.
    [fired] = example.json(
        "fire", "ticket.opened", "--payload", payload, "--model", model,
        "--bot", "desk", "--chat", FORUM, "--thread", "t-481",
    )["runs"]  # fmt: skip
    assert (fired["run"], fired["status"], fired["role"]) == (
        "hook:ticket-opened",
        "done",
        "support",
    )
    assert steps(fired) == ["start", "prepare", "request", "tool", "request", "send", "finish"]
    [turn] = fired["turns"]
    assert ("ticket", "T-481", "code") in attached(turn)  # ticket.context.py read the event
    [message] = fired["messages"]
    assert (message["chat"], message["thread"]) == (FORUM, "t-481")
    assert message["origin"]["run"] == "hook:ticket-opened"
    bound = example.json("bindings", "--chat", FORUM)["bindings"]
    assert [b for b in bound if b["context"] == "ticket"] == [
        {"context": "ticket", "entity": "T-481", "chat": FORUM, "thread": "t-481", "bot": None,
         "source": "tool"},
    ]  # fmt: skip
    # Every later turn in the topic carries the ticket's card, with no id named.
    topic = example.json(
        "turn", "--bot", "desk", "--chat", FORUM, "--thread", "t-481", "--input", "Any news?"
    )
    assert topic["role"] == "support"
    assert ("ticket", "T-481", "chat") in attached(topic)
    assert "Refund for damaged lamp" in text_of(topic)
    other = example.json(
        "turn", "--bot", "desk", "--chat", FORUM, "--thread", "t-999", "--input", "Hello?",
        "--dry-run",
    )  # fmt: skip
    assert [a for a in attached(other) if a[0] == "ticket"] == []


# -- outreach: the first touch, keyed, approved, sent, then the chat bound --------------------


def test_the_first_touch_drafts_for_the_prospect_waits_for_the_owner_then_sends_and_binds(
    example: Runs,
) -> None:
    draft = "Hi Lars, I saw Quayside Foods is hiring a data analyst. Worth a short note?"
    model = example.script("first-touch", [{"text": draft}])
    vars_ = json.dumps({"prospect": "p_913", "chat": PROSPECT_CHAT})
    record = example.json("scenario", "first-touch", "--vars", vars_, "--model", model)
    assert (record["status"], record["role"], record["bot"]) == ("waiting", "sdr", "desk")
    [turn] = record["turns"]  # run_agent(entity=p_913): the step's reach is keyed
    assert attached(turn) == [("offer", None, "run"), ("prospect", "p_913", "run")]
    assert "p_913 | Quayside Foods" in text_of(turn)
    [card] = record["cards"]
    assert (card["status"], card["chat"], card["tool"]) == ("pending", OWNER, "request_approval")
    assert draft in card["summary"]
    assert sent_in(example, OWNER)[card["message_id"]]["origin"]["pending_card"] is True
    assert example.json("bindings", "--chat", PROSPECT_CHAT)["bindings"] == []

    done = example.json("approve", card["id"], "--yes")
    assert done["status"] == "done"
    assert steps(done)[-5:] == ["card", "decision", "send", "bind", "finish"]
    assert done["cards"][0]["status"] == "approved"
    [message] = [m for m in done["messages"] if m["chat"] == PROSPECT_CHAT]
    assert message["text"] == draft
    assert {"context": "prospect", "entity": "p_913"} in message["origin"]["reach"]
    bound = example.json("bindings", "--chat", PROSPECT_CHAT)["bindings"]
    assert [(b["context"], b["entity"], b["source"]) for b in bound] == [
        ("prospect", "p_913", "tool")
    ]
    # The prospect answers: the bound chat carries their card (a chat link outranks the
    # reply's), and no other prospect's.
    answer = reply(
        example, "desk", PROSPECT_CHAT, message["message_id"], "What would it cost?", "--dm"
    )
    assert answer["role"] == "sdr"
    assert [a for a in attached(answer) if a[0] == "prospect"] == [("prospect", "p_913", "chat")]
    assert "Quayside Foods" in text_of(answer)


def test_the_knm_practices_inline_hook_runs_with_the_practices_reach(example: Runs) -> None:
    luck = "Good luck on 12 March! Nine practice days to go."
    model = example.script("booked", [{"text": luck}])
    payload = json.dumps({"date": "2027-03-12"})
    fired = example.json("fire", "knm.exam-booked", "--payload", payload, "--model", model)
    assert fired["event"] == "knm.exam-booked"
    [record] = fired["runs"]
    assert (record["status"], record["role"], record["bot"], record["chat"]) == (
        "done", "dutch-coach", "tutor", "tg:user:2",
    )  # fmt: skip
    assert record["reach"] == [{"context": "knm", "entity": None}]
    [turn] = record["turns"]
    # The learner's room may still keep another practice's reply link from a test before.
    assert ("knm", None, "run") in attached(turn)
    assert [m["text"] for m in record["messages"]] == [luck]
