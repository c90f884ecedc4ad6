"""The dashboard in a real browser: headless Chromium (Debian's), driven by Playwright.

A `keel serve`-built app runs under uvicorn on a free loopback port, in a thread, over a
copy of the reference brain with its seed played and the in-memory runs backend. The test
opens the dashboard, opens a turn that stubbed a context, checks each section's bar and
each stub's knob against what the journal and the spend ledger hold, approves a card from
the keyboard, and saves a screenshot of each page under test-artifacts/web/. Nothing is
downloaded: the browser is /usr/bin/chromium, and the test fails, saying how to install
it, when it is missing.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from playwright.sync_api import Browser

from tests.web.browsing import Live, shot


def test_the_dashboard_shows_a_turn_as_the_ledger_holds_it_and_approves_a_card(
    live: Live, browser: Browser
) -> None:
    engine = live.service.engine
    stubbed = [j for j in engine.turns(limit=500) if j.stubbed]
    assert stubbed, "the seed plays turns with stubs"
    target = stubbed[0]
    assert target.id is not None
    page = browser.new_page(viewport={"width": 1280, "height": 800})

    page.goto(live.base + "/")
    assert page.title() == "System · reference"
    shot(page, "system")
    # The keyboard reaches the page: the first Tab lands on the skip link.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    page.goto(live.base + "/turns")
    page.get_by_role("link", name=str(target.id), exact=True).first.click()
    page.wait_for_url(f"**/turns/{target.id}")
    assert page.locator("h1").inner_text().startswith(f"Turn {target.turn}")
    shot(page, "turn")

    recorded = live.service.engine.store
    with recorded.transaction() as tx:
        journal = tx.journal(target.id)
        ledger = [
            e
            for e in tx.ledger(role=target.role, since=target.request.now)
            if e.conversation == target.conversation and e.turn == target.turn
        ]
    assert journal is not None
    rows = page.locator("#sections tbody tr")
    assert rows.count() == len(journal.sections)
    for index, section in enumerate(journal.sections):
        row = rows.nth(index)
        assert row.get_attribute("data-section") == section.id
        assert row.locator("td").nth(3).inner_text() == f"{section.used:,}"
        if section.budget:
            width = row.locator(".bar span").evaluate("e => e.style.width")
            expected = min(100.0, section.used / section.budget * 100)
            assert float(width.rstrip("%")) == pytest.approx(expected, abs=0.01), section.id
    stubs = page.locator("#stubs tbody tr")
    shown = {
        (stubs.nth(i).get_attribute("data-context"), stubs.nth(i).get_attribute("data-knob"))
        for i in range(stubs.count())
    }
    assert shown == {(e.context, e.knob) for e in ledger if e.knob is not None}
    assert shown, "the turn stubbed a context"
    knob_value = stubs.first.locator("td").nth(3).inner_text()
    assert knob_value == str(journal.knobs.max_active)

    page.goto(live.base + "/runs")
    shot(page, "runs")
    approve = page.locator('tr[data-card="card-1"] button.approve')
    approve.focus()
    with page.expect_navigation(url="**/runs?decided=card-1*"):
        page.keyboard.press("Enter")
    assert page.locator('tr[data-card="card-1"]').count() == 0
    assert "Card card-1 approved by dashboard" in page.locator("#notice").inner_text()
    assert live.runs.run("run-1") is not None
    decided = live.runs.run("run-1")
    assert decided is not None
    assert decided.cards[0].status == "approved"
    assert decided.cards[0].decided_by == "dashboard"

    page.goto(live.base + "/roles/dutch-coach")
    assert page.locator("svg.chart circle").count() >= 1
    page.locator("#agent-context thead th").nth(2).locator("button").click()
    assert page.locator("#agent-context thead th").nth(2).get_attribute("aria-sort") == "ascending"
    shot(page, "role")
    page.goto(live.base + "/doctor")
    shot(page, "doctor")
    assert re.search(r"context\.stubbed", page.content())


def test_a_card_reads_and_decides_at_phone_width(live: Live, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(live.base + "/runs")
    card = page.locator('tr[data-card="card-1"]')
    summary = card.get_by_text("Refund EUR 149.00 to Maria for T-481?")
    for part in (summary, card.locator("button.approve"), card.locator("button.deny")):
        box = part.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390, "on screen, not past its right edge"
        assert box["height"] >= 20
    deny = card.locator("button.deny")
    box = deny.bounding_box()
    assert box is not None
    middle = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).className", middle)
    assert hit == "deny", "a tap on Deny lands on Deny"
    shot(page, "runs-phone")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation(url="**/runs?decided=card-1*"):
        deny.click()
    notice = page.locator("#notice")
    assert notice.inner_text().startswith("Card card-1 denied by dashboard")
    assert page.locator('tr[data-card="card-1"]').count() == 0
    shot(page, "runs-phone-decided")


def test_a_running_runs_page_keeps_itself_current_without_a_reload(
    live: Live, browser: Browser
) -> None:
    page = browser.new_page()
    page.goto(live.base + "/runs/run-1")
    assert page.locator("#live").get_attribute("data-live") == "on"
    page.evaluate("window.keelStayed = true")  # gone if the page reloads
    live.runs.decide("card-1", approve=True, by="cli", note=None)  # decided elsewhere
    page.wait_for_function(
        "document.querySelector('tr[data-card=\"card-1\"]').textContent.includes('approved')",
        timeout=15_000,
    )
    run = live.runs.runs_by_id["run-1"]
    live.runs.runs_by_id["run-1"] = replace(run, status="done")
    page.wait_for_function(
        "document.querySelector('#live').getAttribute('data-live') === 'off'", timeout=15_000
    )
    assert page.evaluate("window.keelStayed") is True
    assert page.locator("#live .facts .status").inner_text() == "done"
    assert page.locator('tr[data-card="card-1"] form').count() == 0, "no form on a decided card"
    shot(page, "run-live")


# What a phone shows of a table wider than the screen: a shadow at the edge it scrolls to.
WIDE_TABLE = """() => {
  for (const table of document.querySelectorAll('main table')) {
    if (table.scrollWidth > table.clientWidth + 8) {
      const style = getComputedStyle(table);
      table.scrollLeft = table.scrollWidth;
      const end = table.scrollLeft > 0;
      return {image: style.backgroundImage, attachment: style.backgroundAttachment,
              overflow: style.overflowX, scrolls: end};
    }
  }
  return null;
}"""


def test_a_wide_table_at_phone_width_shows_it_scrolls(live: Live, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    found = None
    for path in ("/turns", "/runs", "/chats", "/system"):
        page.goto(live.base + path)
        found = page.evaluate(WIDE_TABLE)
        if found is not None:
            break
    assert found is not None, "some page has a table wider than a phone"
    assert found["overflow"] == "auto"
    assert found["scrolls"], "the table scrolls in its own box"
    # Two shadows that stay at the box's edges, two covers that scroll with the rows.
    assert found["image"].count("radial-gradient") == 2
    assert found["image"].count("linear-gradient") == 2
    assert found["attachment"] == "local, local, scroll, scroll"
    shot(page, "wide-table-phone")
    wide = browser.new_page(viewport={"width": 1280, "height": 900})
    wide.goto(live.base + "/turns")
    image = wide.evaluate(
        "() => getComputedStyle(document.querySelector('main table')).backgroundImage"
    )
    assert image == "none", "a desktop table fits and shows no cue"
