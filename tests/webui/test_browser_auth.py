"""The web UI against a server that requires API keys: sign-in, a key kept for the tab only,
tenants that never see each other's documents, conversations and runs, a wrong or revoked key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from reasonloop.server.auth import hash_key
from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

KEYS = [
    {"sha256": hash_key("key-harbour"), "tenant": "harbour"},
    {"sha256": hash_key("key-orchard"), "tenant": "orchard"},
]
SCENARIOS = {"q-who": {"replies": ["Answered for this tenant [1]."]}}
LISTED = """async () => { const h = { Authorization: `Bearer ${sessionStorage.getItem('rl.apiKey')}` };
    const runs = await (await fetch('v1/runs', { headers: h })).json();
    const convs = await (await fetch('v1/conversations', { headers: h })).json();
    return [runs.length, convs.length]; }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("webui-auth"), SCENARIOS, api_keys=KEYS)
    srv.start()
    srv.ingest({"harbour.txt": "The harbour master opens the lock gates at high water."}, key="key-harbour")
    srv.ingest({"orchard.txt": "The orchard's apple trees are pruned in February."}, key="key-orchard")
    yield srv
    srv.stop()


def fresh_page(browser, server) -> Page:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(server.url)
    return page


def sign_in(page: Page, key: str) -> None:
    expect(page.locator("#login-dialog")).to_be_visible()
    page.fill("#login-key", key)
    page.click("#login-form button[type=submit]")


def test_the_page_asks_for_a_key_and_refuses_a_wrong_one(browser, server):
    page = fresh_page(browser, server)
    sign_in(page, "not-a-key")
    expect(page.locator("#login-error")).to_have_text("The server did not accept this key.")
    page.screenshot(path=str(screenshot_dir() / "sign-in.png"))
    sign_in(page, "key-harbour")
    expect(page.locator("#login-dialog")).to_be_hidden()
    expect(page.locator("#strategy option").first).to_be_attached()
    assert page.evaluate("() => sessionStorage.getItem('rl.apiKey')") == "key-harbour"
    assert page.evaluate("() => JSON.stringify(localStorage)").find("key-harbour") < 0  # never kept beyond the tab
    page.context.close()


def test_each_tenant_sees_only_its_own_documents_conversations_and_runs(browser, server):
    harbour = fresh_page(browser, server)
    sign_in(harbour, "key-harbour")
    harbour.select_option("#strategy", "reasoning:qa")
    harbour.fill("#question", "q-who: when do the gates open?")
    harbour.click("#send")
    turn = harbour.locator("#turns .turn").last
    expect(turn.locator(".usage")).not_to_be_empty(timeout=30_000)
    expect(turn.locator(".sources")).to_contain_text("harbour")
    harbour.click("a[data-view=documents]")
    expect(harbour.locator("#doc-rows tr")).to_have_count(1)
    expect(harbour.locator("#doc-rows")).to_contain_text("harbour")

    orchard = fresh_page(browser, server)
    sign_in(orchard, "key-orchard")
    expect(orchard.locator("#strategy option").first).to_be_attached()
    expect(orchard.locator("#conv-list .conv")).to_have_count(0)  # harbour's conversation is not listed
    orchard.click("a[data-view=documents]")
    expect(orchard.locator("#doc-rows tr")).to_have_count(1)
    expect(orchard.locator("#doc-rows")).to_contain_text("orchard")
    expect(orchard.locator("#doc-rows")).not_to_contain_text("harbour")
    # Nor can its key read harbour's runs or conversations through the API the page uses.
    listed = orchard.evaluate(LISTED)
    assert listed == [0, 0]
    assert harbour.evaluate(LISTED) == [1, 1]
    harbour.context.close()
    orchard.context.close()


def test_a_key_refused_later_brings_the_sign_in_back(browser, server):
    page = fresh_page(browser, server)
    sign_in(page, "key-harbour")
    expect(page.locator("#strategy option").first).to_be_attached()
    page.evaluate("() => sessionStorage.setItem('rl.apiKey', 'revoked-key')")  # as if the key were withdrawn
    page.click("a[data-view=documents]")
    expect(page.locator("#login-dialog")).to_be_visible()
    expect(page.locator("#login-error")).to_have_text("Your key was refused; sign in again.")
    page.context.close()
