"""The thinking-mode selector in headless Chromium against a real ``reasonloop serve``: its labels in
English and Chinese, a mode in place of the strategy and its settings, and the auto mode's route drawn
in the trace."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

ROUTE = {"route": "none", "reason": "a greeting, nothing to look up"}
SCENARIOS = {
    "q-auto": {"replies": [json.dumps(ROUTE), "Good evening! Ask me about your documents."]},
    "q-fast": {"replies": ["Nothing in the documents says so."]},
    "q-zh": {"replies": [json.dumps(ROUTE), "晚上好！"]},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("modes"), SCENARIOS)
    srv.start()
    yield srv
    srv.stop()


def open_page(browser, server: Server, locale: str) -> tuple[Page, list[str]]:
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url)
    expect(page.locator("#mode option").nth(1)).to_be_attached()
    return page, errors


def test_the_mode_selector_replaces_the_strategy_and_draws_the_route(browser, server):
    page, errors = open_page(browser, server, "en-US")
    options = page.locator("#mode option")
    expect(options).to_have_text(
        ["None: the strategy below", "Fast", "Balanced", "Deep", "Research (not installed)", "Auto"]
    )
    expect(page.locator("#mode option[value=research]")).to_be_disabled()
    expect(page.locator("#strategy-box")).to_be_visible()

    page.select_option("#mode", "auto")
    expect(page.locator("#strategy-box")).to_be_hidden()
    expect(page.locator("#settings-box")).to_be_hidden()
    expect(page.locator("#mode-desc")).to_have_text(
        "A router picks no search, one search, multi-hop or research per question, within the budget"
    )
    page.fill("#question", "q-auto hello there")
    page.click("#send")
    route = page.locator(".t-route")
    expect(route).to_have_count(1)
    expect(route.locator(".route-name")).to_have_text("no search")
    expect(route.locator(".route-why")).to_have_text("decided by the model: a greeting, nothing to look up")
    expect(page.locator(".answer").last).to_contain_text("Good evening!")
    page.evaluate("document.querySelectorAll('details.trace').forEach((d) => { d.open = true; })")
    page.screenshot(path=str(screenshot_dir() / "mode-auto-route.png"))
    with httpx.Client(base_url=server.url) as http:
        runs = http.get("/v1/runs").json()
    assert runs[0]["reasoning"] == "auto"

    page.select_option("#mode", "fast")
    page.fill("#question", "q-fast what does the log say?")
    page.click("#send")
    expect(page.locator(".answer").last).to_contain_text("Nothing in the documents")
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/v1/runs").json()[0]["reasoning"] == "fast"

    page.reload()  # the choice is kept
    expect(page.locator("#mode")).to_have_value("fast")
    expect(page.locator("#strategy-box")).to_be_hidden()
    page.select_option("#mode", "")
    expect(page.locator("#strategy-box")).to_be_visible()
    expect(page.locator("#settings-box")).to_be_visible()
    page.context.close()
    assert not errors, errors


def test_the_modes_and_the_route_speak_chinese(browser, server):
    page, errors = open_page(browser, server, "zh-CN")
    expect(page.locator("#mode option")).to_have_text(
        ["不用：使用下方的策略", "快速", "均衡", "深入", "研究 (未安装)", "自动"]
    )
    page.select_option("#mode", "auto")
    expect(page.locator("#mode-desc")).to_contain_text("由路由器按问题")
    page.fill("#question", "q-zh 晚上好")
    page.click("#send")
    expect(page.locator(".t-route .route-name")).to_have_text("不检索")
    expect(page.locator(".t-route .route-why")).to_have_text("由模型决定: a greeting, nothing to look up")
    page.evaluate("document.querySelectorAll('details.trace').forEach((d) => { d.open = true; })")
    page.screenshot(path=str(screenshot_dir() / "mode-auto-route-zh.png"))
    page.context.close()
    assert not errors, errors
