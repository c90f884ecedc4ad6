"""The reference brain's worked examples, played as turns through `keel` (see
tests/runtime/test_examples.py for what each one shows)."""

from __future__ import annotations

from tests.runtime.driver import Keel

OWNER = "tg:user:1"
OWNER_DM = ("--bot", "nova", "--chat", OWNER, "--dm")
FORUM = "tg:chat:-1003000000001"
PROSPECT_CHAT = "tg:chat:5512001"
CLIENT_GROUPS = ("tg:chat:-1002000000101", "tg:chat:-1002000000102", "tg:chat:-1002000000103")
LEARNER = ("--bot", "tutor", "--chat", "tg:user:7", "--dm")
LARGO = ("--bot", "largo", "--chat", "tg:user:9", "--dm")


def film_post(keel: Keel, message_id: str, film: str) -> None:
    keel.json(
        "send", "--bot", "nova", "--chat", OWNER, "--text", f"Tonight: {film}",
        "--run", "heartbeat:evening-film", "--about-entity", film, "--message-id", message_id,
    )  # fmt: skip


def play(keel: Keel) -> int:
    """Play every worked example's turns; return how many turns were prepared."""
    turns = [
        # A freelancer's invoice chase — run
        ("--bot", "nova", "--chat", OWNER, "--run", "heartbeat:invoice-chase"),
        ("--bot", "nova", "--chat", OWNER, "--input", "has Kettle paid yet?"),
        # An e-commerce return policy — ask
        ("--bot", "desk", "--chat", "tg:user:42", "--input", "where is my parcel?"),
        ("--bot", "desk", "--chat", "tg:user:42", "--open", "policy", "--input", "earrings?"),
        ("--bot", "desk", "--chat", "tg:user:42", "--input", "and the label?"),
        # A family group's shopping list — always
        ("--bot", "nova", "--chat", "tg:chat:-1001000000001", "--input", "we need milk"),
        # A coach persona's daily pick — run, then reply with the film's key
        (
            "--bot",
            "nova",
            "--chat",
            "run:evening-film",
            "--role",
            "coach",
            "--run",
            "heartbeat:evening-film",
        ),
        # Largo's layout — depth
        (*LARGO, "--run", "heartbeat:morning-checkin"),
        (*LARGO, "--run", "heartbeat:film-of-day"),
        # A language coach with four practices
        (*LEARNER, "--run", "hook:skip", "--reach", "listen"),
        *(
            (*LEARNER, "--run", f"scenario:{p}-practice")
            for p in ("knm", "listen", "write", "read")
        ),
    ]
    count = 0
    for args in turns:
        keel.turn(*args)
        count += 1
    film_post(keel, "film-1", "tt1375666")
    film_post(keel, "film-2", "tt0211915")
    for args in [
        (*OWNER_DM, "--reply-to", "film-1", "--input", "8/10"),
        (*OWNER_DM, "--input", "and tomorrow?"),
        (*OWNER_DM, "--reply-to", "film-2", "--input", "loved it"),
        OWNER_DM,
        OWNER_DM,
    ]:
        keel.turn(*args)
        count += 1
    # A support desk with a ticket per thread — chat with an entity key
    keel.json(
        "bind", "--context", "ticket", "--entity", "T-481", "--chat", FORUM, "--thread", "77",
        "--role", "support",
    )  # fmt: skip
    keel.turn("--bot", "desk", "--chat", FORUM, "--thread", "77", "--input", "any news?")
    # B2B outreach, an agent per prospect chat — chat from a pipeline
    run = ("--run", "scenario:first-touch", "--entity", "p_912")
    keel.turn("--bot", "desk", "--chat", "run:first-touch", "--role", "sdr", *run)
    keel.json(
        "bind",
        "--context",
        "prospect",
        "--entity",
        "p_912",
        "--chat",
        PROSPECT_CHAT,
        "--role",
        "sdr",
    )
    keel.json(
        "send",
        "--bot",
        "desk",
        "--text",
        "Hi Dana",
        *run,
        "--chat",
        PROSPECT_CHAT,
        "--message-id",
        "draft-2",
    )
    keel.turn("--bot", "desk", "--chat", PROSPECT_CHAT, "--dm", "--reply-to", "draft-2")
    count += 3
    # An agency with a group per client — isolation by entity key
    for chat in CLIENT_GROUPS:
        keel.turn("--bot", "nova", "--chat", chat, "--input", "what is open for us?")
        count += 1
    keel.turn(
        "--bot", "nova", "--chat", CLIENT_GROUPS[0], "--open", "client=globex", "--open", "leave",
    )  # fmt: skip
    keel.turn("--bot", "desk", "--chat", CLIENT_GROUPS[0], "--open", "client")
    return count + 2
