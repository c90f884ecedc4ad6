"""The dashboard's forms that act, in a real browser (headless Chromium, as in
`test_browser`): each is filled and sent at desktop width and at a phone's 390 px, lands
where it says, and shows a refusal on the form with the fields as typed. A card is decided
in place, the page never reloading. No page scrolls sideways at 390 px.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from tests.web.browsing import Live, shot

SIZES = [
    pytest.param({"width": 1280, "height": 800}, id="desktop"),
    pytest.param({"width": 390, "height": 844}, id="phone"),
]
PHONE = {"width": 390, "height": 844}


def opened(chrome: Browser, size: dict[str, int]) -> Page:
    page = chrome.new_page(viewport={"width": size["width"], "height": size["height"]})
    page.set_default_timeout(20_000)
    return page


def fits(page: Page) -> None:
    """The page's body does not scroll sideways: nothing is wider than the viewport."""
    width = page.evaluate("window.innerWidth")
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= width, f"{page.url} is {wide} px wide in a {width} px viewport"


def name_of(size: dict[str, int]) -> str:
    return "phone" if size["width"] < 600 else "desktop"


@pytest.mark.parametrize("size", SIZES)
def test_a_message_is_tried_dry_run_and_refused_from_the_form(
    live: Live, browser: Browser, size: dict[str, int]
) -> None:
    page = opened(browser, size)
    engine = live.service.engine
    before = len(engine.turns(limit=1000))

    page.goto(live.base + "/try")
    fits(page)
    page.fill("#f-bot", "nova")
    page.fill("#f-chat", "tg:user:1")
    page.fill("#f-sender", "tg:user:1")
    page.fill("#f-text", "What is due this week?")
    page.click("#try-form button[type=submit]")
    page.wait_for_url("**/turns/*")
    newest = engine.turns(limit=1)[0]
    assert page.url.endswith(f"/turns/{newest.id}")
    assert newest.request.input == "What is due this week?"
    assert page.locator("h1").inner_text().startswith(f"Turn {newest.turn}")
    fits(page)

    page.goto(live.base + "/try")
    page.fill("#f-bot", "tutor")
    page.fill("#f-chat", "tg:user:2")
    page.fill("#f-text", "Hoe gaat het?")
    page.check("#f-dry_run")
    page.click("#try-form button[type=submit]")
    page.wait_for_selector("#dry-run")
    assert page.locator("h1").inner_text().startswith("Dry run")
    assert page.locator("#sections tbody tr").count() >= 1
    assert len(engine.turns(limit=1000)) == before + 1, "the dry run recorded nothing"
    fits(page)
    shot(page, f"try-dry-run-{name_of(size)}")

    page.goto(live.base + "/try")
    page.fill("#f-bot", "nova")
    page.fill("#f-chat", "tg:user:1")
    page.fill("#f-role", "nope")
    page.fill("#f-text", "kept as typed")
    page.click("#try-form button[type=submit]")
    page.wait_for_selector("#refusal")
    assert "no role 'nope' in this brain" in page.locator("#refusal").inner_text()
    assert page.input_value("#f-role") == "nope"
    assert page.input_value("#f-text") == "kept as typed"
    assert len(engine.turns(limit=1000)) == before + 1
    fits(page)
    shot(page, f"try-refused-{name_of(size)}")


@pytest.mark.parametrize("size", SIZES)
def test_a_run_is_started_and_an_event_fired_from_the_forms(
    live: Live, browser: Browser, size: dict[str, int]
) -> None:
    page = opened(browser, size)
    page.goto(live.base + "/start")
    fits(page)
    page.fill("#run-form #f-run", "scenario:knm-practice")
    page.fill("#run-form #f-vars", '{"level": ')
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("#run-form .problem")
    assert "is not JSON" in page.locator("#e-vars").inner_text()
    assert page.input_value("#run-form #f-vars") == '{"level": '
    assert list(live.runs.runs_by_id) == ["run-1"], "nothing started"
    fits(page)
    shot(page, f"start-refused-{name_of(size)}")

    page.fill("#run-form #f-vars", '{"level": "A2"}')
    page.click("#run-form button[type=submit]")
    page.wait_for_url("**/runs/run-2")
    assert page.locator("h1").inner_text() == "Run run-2"
    assert live.runs.runs_by_id["run-2"].run.key == "scenario:knm-practice"
    fits(page)

    page.goto(live.base + "/start")
    page.fill("#ev-f-event", "ticket.opened")
    page.fill("#ev-f-payload", '{"ticket": "T-9"}')
    page.click("#event-form button[type=submit]")
    page.wait_for_url("**/runs/run-3")
    event, payload, _, _, _ = live.runs.fired[-1]
    assert (event, dict(payload)) == ("ticket.opened", {"ticket": "T-9"})
    fits(page)


@pytest.mark.parametrize("size", SIZES)
def test_what_if_compares_before_and_after_from_the_form(
    live: Live, browser: Browser, size: dict[str, int]
) -> None:
    page = opened(browser, size)
    page.goto(live.base + "/what-if")
    page.fill("[name='contexts.maxActive']", "x")
    page.click("#what-if-form button[type=submit]")
    page.wait_for_selector(".problem")
    assert "not a whole number" in page.locator(".field.wrong .problem").inner_text()
    assert page.input_value("[name='contexts.maxActive']") == "x"

    page.fill("[name='contexts.maxActive']", "1")
    page.fill("#f-since", "30d")
    page.click("#what-if-form button[type=submit]")
    page.wait_for_selector("#what-if")
    rows = page.locator("#contexts tbody tr")
    assert rows.count() >= 1
    changed = page.locator("#contexts tbody tr.changed")
    assert changed.count() >= 1, "maxActive 1 stubs what attached before"
    cells = changed.first.locator("td")
    assert cells.nth(1).inner_text() != cells.nth(2).inner_text()
    fits(page)
    shot(page, f"what-if-{name_of(size)}")


@pytest.mark.parametrize("size", SIZES)
def test_a_card_is_decided_in_place_without_a_reload(
    live: Live, browser: Browser, size: dict[str, int]
) -> None:
    page = opened(browser, size)
    page.goto(live.base + "/runs/run-1")
    assert page.locator("#live .facts .status").inner_text() == "waiting"
    page.evaluate("window.keelStayed = true")  # gone if the page reloads
    page.locator('tr[data-card="card-1"] button.approve').click()
    page.wait_for_selector("#notice")
    assert page.evaluate("window.keelStayed") is True, "decided in place, not reloaded"
    assert "decided=card-1" in page.url
    assert page.locator("#notice").inner_text().startswith("Card card-1 approved by dashboard")
    row = page.locator('tr[data-card="card-1"]')
    assert "approved" in row.locator("td").nth(4).inner_text()
    assert row.locator("form").count() == 0
    assert page.locator("#live .facts .status").inner_text() != "waiting"
    fits(page)
    shot(page, f"decided-in-place-{name_of(size)}")


def test_no_page_scrolls_sideways_at_phone_width(live: Live, browser: Browser) -> None:
    engine = live.service.engine
    stubbed = next(j for j in engine.turns(limit=500) if j.stubbed)
    chat = stubbed.conversation.chat
    page = opened(browser, PHONE)
    for path in (
        "/",
        "/turns",
        f"/turns/{stubbed.id}",
        "/chats",
        f"/chat?chat={chat}",
        f"/roles/{stubbed.role}",
        "/runs",
        "/runs/run-1",
        "/doctor",
        "/try",
        "/start",
        "/what-if",
        "/login",
        "/turns/999999",
    ):
        page.goto(live.base + path)
        fits(page)
