"""A tool call waiting for approval in the web UI (headless Chromium): the card, its editable
arguments, a refused modification shown on the card, a confirmation and a rejection."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, react_step
from tests.webui.test_browser import ask, choose, last_turn, shot, wait_done

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

HOSTILE = "<img src=x onerror=\"window.__pwned='card'\"><script>window.__pwned='card2'</script>"
SCENARIOS = {
    "q-approve": {
        "replies": [
            react_step("slow_lookup", {"input": HOSTILE}, "look it up"),
            "Thought: done.\nFinal Answer: Looked it up.",
        ]
    },
    "q-refuse": {
        "replies": [
            react_step("slow_lookup", {"input": "gamma"}, "look it up"),
            "Thought: refused.\nFinal Answer: Not looked up.",
        ]
    },
}

CAREFUL = """
[agents.careful]
description = "Looks words up, with a person's approval"
reasoning = "react"
tools = ["slow_lookup"]
kb = false
approvals = { slow_lookup = "always" }
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("webui-approvals"), SCENARIOS)
    with srv.config.open("a", encoding="utf-8") as f:
        f.write(CAREFUL)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def page(browser, server) -> Iterator[Page]:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server.url)
    expect(pg.locator("#strategy option").first).to_be_attached()
    yield pg
    context.close()
    assert not errors, errors


def test_a_waiting_call_is_a_card_whose_edited_arguments_are_checked_then_run(page):
    choose(page, "agent:careful")
    ask(page, "q-approve: look this word up")
    turn = last_turn(page)
    call = turn.locator(".trace .call").first
    card = call.locator(".approval")
    expect(card).to_be_visible()
    expect(call).to_have_attribute("data-status", "awaiting")
    expect(call.locator(".badge")).to_have_text("awaiting approval")
    box = card.locator("textarea.approval-arguments")
    assert json.loads(box.input_value()) == {"input": HOSTILE}  # the model's text, as text
    expect(card.locator(".approval-why")).to_have_text("the agent's approvals ask for slow_lookup")
    shot(page, "approval-card-pending")

    box.fill('{"input": 5}')
    card.locator("button.approval-confirm").click()
    expect(card.locator(".approval-problem")).to_contain_text("5 is not of type 'string'")
    expect(card.locator("button.approval-confirm")).to_be_enabled()  # still pending: answer again
    box.fill("not json")
    card.locator("button.approval-confirm").click()
    expect(card.locator(".approval-problem")).to_contain_text("The arguments are not JSON")
    shot(page, "approval-card-refused")

    box.fill('{"input": "beta"}')
    card.locator("button.approval-confirm").click()
    wait_done(page)
    expect(card).to_have_attribute("data-decision", "modify")
    expect(card.locator(".approval-decided")).to_have_text("Run with changed arguments · via rest")
    call.locator(".observation summary").click()
    expect(call.locator(".observation pre")).to_have_text("beta: found in the slow dictionary")
    expect(turn.locator(".answer")).to_have_text("Looked it up.")
    assert page.evaluate("() => window.__pwned") is None
    shot(page, "approval-card-decided")


def test_a_rejection_with_its_reason_is_what_the_model_reads(page):
    choose(page, "agent:careful")
    ask(page, "q-refuse: look gamma up")
    turn = last_turn(page)
    card = turn.locator(".approval")
    card.locator("input.approval-reason").fill("not <b>now</b>")
    card.locator("button.approval-reject").click()
    wait_done(page)
    expect(card).to_have_attribute("data-decision", "reject")
    expect(card.locator(".approval-why")).to_have_text("not <b>now</b>")
    call = turn.locator(".trace .call").first
    expect(call).to_have_attribute("data-status", "failed")
    expect(call.locator(".observation pre")).to_contain_text("rejected by its approver: not <b>now</b>")
