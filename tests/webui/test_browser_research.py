"""A research run in headless Chromium: its plan drawn as a tree of rounds and questions, each
sub-agent's live state with its budget and its own steps nested under it, the judge's decisions,
and the report with its citations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.reasoning.research_helpers import DOCS, PLAN, QUESTION
from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

GAP = {"decision": "gap", "reason": "the population is missing", "gaps": [PLAN[2]]}
SCENARIOS = {
    "research": {
        "research": True,
        "delay_s": 0.04,
        "plan": PLAN[:2],
        "judge": [GAP, {"decision": "answer", "reason": "all found"}],
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("research"), SCENARIOS)
    srv.start()
    srv.ingest({hit.source: hit.text for hit in DOCS})
    yield srv
    srv.stop()


@pytest.fixture
def page(browser, server) -> Iterator[Page]:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 1400})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server.url)
    expect(pg.locator("#strategy option").first).to_be_attached()
    yield pg
    context.close()
    assert not errors, errors


def test_a_research_run_is_drawn_as_a_tree_with_live_sub_agents_the_judge_and_a_cited_report(page):
    page.select_option("#strategy", "reasoning:research")
    page.fill("#question", QUESTION)
    page.click("#send")
    turn = page.locator("#turns .turn").last
    tree = turn.locator(".research")
    tasks = tree.locator(".research-task")
    # live: a sub-agent is seen researching, with its budget, its own steps under it
    running = tree.locator('.research-task[data-status="running"]').first
    expect(running).to_be_visible()
    expect(running.locator(".badge")).to_have_text("researching")
    expect(running.locator(".budget")).to_contain_text("tool calls")
    page.screenshot(path=str(screenshot_dir() / "chat-research-live.png"))
    expect(tasks).to_have_count(3)  # two planned, then the follow-up for the gap
    expect(turn.locator(".usage")).not_to_be_empty(timeout=60_000)

    rounds = tree.locator(".research-round")
    expect(rounds).to_have_count(2)
    expect(rounds.nth(0).locator(".research-task .question")).to_have_text(PLAN[:2])
    expect(rounds.nth(1).locator(".research-task .question")).to_have_text([PLAN[2]])
    expect(rounds.nth(1).locator(".step-id")).to_have_text(["2.1"])
    assert [tasks.nth(i).get_attribute("data-status") for i in range(3)] == ["done"] * 3
    expect(tasks.nth(0).locator(".findings")).to_have_text("The Aria 2 headphones are made by Northwind Audio [1].")
    expect(tasks.nth(0).locator(".children .call .tool").first).to_have_text("docsearch")  # its own steps
    judges = tree.locator(".research-judge")
    expect(judges).to_have_count(2)
    assert [judges.nth(i).get_attribute("data-outcome") for i in range(2)] == ["gap", "answer"]
    expect(judges.nth(0).locator(".outcome")).to_have_text("research the gaps")
    expect(judges.nth(0).locator(".gaps li")).to_have_text([PLAN[2]])
    expect(tree.locator(".research-report .summary")).to_have_text("1 section · 3 citations")
    # the report is the answer, its markers buttons for the three sources
    expect(turn.locator(".answer h2").first).to_have_text("Findings")
    expect(turn.locator(".answer button.cite")).to_have_text(["[1]", "[2]", "[3]"])
    expect(turn.locator(".sources .source")).to_have_count(3)
    for source in ("aria", "northwind", "oslo"):
        expect(turn.locator(".sources")).to_contain_text(source)
    turn.locator(".trace").evaluate("node => { node.open = true; }")
    page.screenshot(path=str(screenshot_dir() / "chat-research-tree.png"), full_page=True)
