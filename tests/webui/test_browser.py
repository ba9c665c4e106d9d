"""The web UI in headless Chromium against a real ``reasonloop serve`` with a scripted model.

One server and one browser serve the whole module; each test opens its own page. Each scenario's
keyword (``q-react``, ``q-stop``...) picks the replies the model gives to that question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from reasonloop.reasoning.strategies.react import ReActReasoning
from reasonloop.reasoning.strategies.rewoo import ReWOOReasoning
from reasonloop.registry import PluginInfo
from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, react_step, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

LIGHTHOUSE = (
    "The lighthouse keeper logs every ship that passes the northern reef at night. "
    "Each entry names the ship, the hour and the weather. "
    "In winter storms the keeper also fires the fog signal every two minutes, and the log says for how long. "
    "The log books since 1911 are kept in the harbour office, where anyone may read them on weekdays. "
    "The oldest pages were copied by hand after a flood in 1953 damaged the originals."
)
QUOTE_START = "The lighthouse keeper logs every ship"
HOSTILE_DOC = (
    "Harbour rules. <script>window.__pwned = 'doc'</script> <img src=x onerror=\"window.__pwned='docimg'\"> "
    "Boats moor at the east quay."
)
LONG = " ".join(f"word{i}" for i in range(260))
RESUME = " ".join(f"tide{i}" for i in range(100))
HOSTILE_ANSWER = (
    "Careful: <script>window.__pwned = 'answer'</script>\n\n"
    "<img src=x onerror=\"window.__pwned = 'img'\">\n\n"
    "[click me](javascript:window.__pwned='link') and <javascript:window.__pwned='auto'>\n\n"
    "<details open><summary>more</summary><iframe src=\"javascript:window.__pwned='frame'\"></iframe></details>\n\n"
    "![pic](javascript:window.__pwned='pic')"
)

SCENARIOS = {
    "q-stream": {
        "replies": [
            "The keeper logs **every ship** that passes the reef [1].\n\n"
            "| ship | hour |\n|---|---|\n| Aurora | 02:10 |\n| Borealis | 03:40 |\n\n"
            "```\nlog --ships --night\n```\n\n- 北方暗礁的灯塔\n- fog signal every two minutes\n\n" + LONG[:600]
        ],
        "chunk_size": 6,
        "delay_s": 0.01,
    },
    "q-react": {
        "replies": [
            react_step("docsearch", {"query": "who does the keeper log"}, "I should search the documents"),
            "Thought: The log is described in the documents.\nFinal Answer: The keeper logs every ship [1].",
        ]
    },
    "q-rewoo": {
        "replies": [
            "Plan: look both words up\n#E1 = slow_lookup[alpha]\n#E2 = slow_lookup[beta]\n#E3 = slow_lookup[#E1 and #E2]",
            "Alpha and beta were both found.",
        ]
    },
    "q-stuck": {"replies": ["#E1 = stuck_lookup[gamma]", "The dictionary did not answer."]},
    "q-unsearched": {"replies": ["1. who keeps the log?\n2. where does #1 keep it?\n3. since when?"]},
    "q-split": {
        "replies": [
            "1. q-split who keeps the log?\n2. q-split where does #1 keep the log books?\n3. q-split zzzz qqqq?",
            "the keeper [1]",
            "in the harbour office [1]",
            "The keeper keeps them in the harbour office [1].",
        ]
    },
    "q-writer": {
        "replies": [
            {"tool_calls": [{"name": "run_agent", "arguments": {"query": "q-sub: who keeps the log?"}}]},
            "The researcher says the keeper keeps it.",
        ]
    },
    "q-sub": {
        "replies": [
            react_step("docsearch", {"query": "keeper log"}, "search for it"),
            "Final Answer: the keeper [1]",
        ]
    },
    "q-cite": {"replies": ["Every ship that passes the reef is logged by the keeper [1]."]},
    "q-stop": {"replies": [LONG], "chunk_size": 5, "delay_s": 0.05},
    "q-resume": {"replies": [RESUME], "chunk_size": 6, "delay_s": 0.03},
    "q-restart": {"replies": [LONG], "chunk_size": 5, "delay_s": 0.05},
    "q-budget": {
        "replies": [
            react_step("docsearch", {"query": "reef"}, "search first"),
            "The answer from what was found [1].",
        ]
    },
    "q-hostile": {"replies": [HOSTILE_ANSWER]},
    "q-guard": {"replies": ["Final Answer: I answer without looking anything up."]},
    "q-upload": {"replies": ["The quay rules say boats moor at the east quay [1]."]},
    "q-fail": {"replies": ["A partial answer before the break"], "fail": True, "chunk_size": 5},
    "q-zh": {"replies": ["灯塔看守人记录每一艘经过北方暗礁的船只 [1]。"]},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("webui"), SCENARIOS)
    srv.start()
    srv.ingest({"lighthouse.txt": LIGHTHOUSE})
    yield srv
    srv.stop()


@pytest.fixture
def page(browser, server) -> Iterator[Page]:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server.url)
    expect(pg.locator("#strategy option").first).to_be_attached()
    yield pg
    context.close()
    assert not errors, errors


def shot(page: Page, name: str) -> Path:
    path = screenshot_dir() / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def choose(page: Page, value: str) -> None:
    page.select_option("#strategy", value)


def ask(page: Page, question: str) -> None:
    page.fill("#question", question)
    page.click("#send")


def last_turn(page: Page):
    return page.locator("#turns .turn").last


def wait_done(page: Page, timeout: float = 30_000):
    turn = last_turn(page)
    expect(turn.locator(".usage")).not_to_be_empty(timeout=timeout)
    return turn


def test_the_answer_streams_token_by_token_and_renders_markdown(page):
    choose(page, "reasoning:qa")
    page.evaluate(
        """() => { window.__lengths = []; new MutationObserver(() => {
            const a = document.querySelector('#turns .turn:last-child .answer');
            if (a) window.__lengths.push(a.textContent.length);
        }).observe(document.getElementById('turns'), {subtree: true, childList: true, characterData: true}); }"""
    )
    ask(page, "q-stream: who does the keeper log?")
    wait_done(page)
    growing = [n for n in page.evaluate("() => window.__lengths") if n > 0]
    assert len(set(growing)) >= 5, growing  # on screen at many lengths on its way: streamed, not dropped in at once
    assert growing[-1] == max(growing)  # (Markdown markers vanish as they close, so not always growing)
    turn = wait_done(page)
    expect(turn.locator(".answer table td").first).to_have_text("Aurora")
    expect(turn.locator(".answer pre code")).to_have_text("log --ships --night\n")
    expect(turn.locator(".answer li").first).to_have_text("北方暗礁的灯塔")
    expect(turn.locator(".answer strong")).to_have_text("every ship")
    expect(turn.locator(".answer button.cite")).to_have_text("[1]")
    usage = turn.locator(".usage").inner_text()
    assert "1 model calls" in usage and "0 tool calls" in usage and "1 searches" in usage and "finished" in usage
    shot(page, "chat-streamed-answer")


def test_a_react_run_shows_its_thoughts_and_tool_calls(page):
    choose(page, "reasoning:react")
    ask(page, "q-react: who does the keeper log?")
    turn = wait_done(page)
    trace = turn.locator(".trace")
    expect(trace.locator(".t-thought").first).to_contain_text("I should search the documents")
    call = trace.locator(".call").first
    expect(call.locator(".tool")).to_have_text("docsearch")
    expect(call).to_have_attribute("data-status", "done")
    expect(call.locator(".call-body pre").first).to_contain_text("who does the keeper log")
    call.locator(".observation summary").click()
    expect(call.locator(".observation pre")).to_contain_text("lighthouse keeper logs every ship")
    expect(turn.locator(".answer")).to_have_text("The keeper logs every ship [1].")
    expect(turn.locator(".sources .source")).to_contain_text("lighthouse")
    shot(page, "chat-react-trace")


def test_a_rewoo_plan_shows_its_steps_running_in_parallel(page):
    choose(page, "agent:planner")
    ask(page, "q-rewoo: look up alpha and beta")
    turn = last_turn(page)
    steps = turn.locator(".plan-steps .step")
    expect(steps).to_have_count(3, timeout=15_000)
    page.wait_for_function(
        "() => document.querySelectorAll('.turn:last-child .step[data-status=running]').length === 2", timeout=15_000
    )
    assert steps.nth(2).get_attribute("data-status") == "waiting"  # it needs #E1 and #E2 first
    # drawn from the plan event: each step's id, tool, planned input and dependencies
    expect(steps.locator(".step-id")).to_have_text(["#E1", "#E2", "#E3"])
    expect(steps.locator(".tool")).to_have_text(["slow_lookup"] * 3)
    expect(steps.locator(".planned")).to_have_text(["alpha", "beta", "#E1 and #E2"])
    assert steps.nth(2).get_attribute("data-depends-on") == "E1 E2"
    expect(turn.locator(".t-thought")).to_have_count(0)  # the plan's text is not drawn beside it
    shot(page, "chat-rewoo-parallel")
    wait_done(page)
    assert [steps.nth(i).get_attribute("data-status") for i in range(3)] == ["done", "done", "done"]
    expect(steps.nth(2).locator(".call-body pre").first).to_contain_text("alpha: found in the slow dictionary")
    expect(turn.locator(".answer")).to_have_text("Alpha and beta were both found.")


def test_decompose_draws_its_sub_questions_as_a_plan_filled_in_by_its_searches(page):
    choose(page, "reasoning:decompose")
    ask(page, "q-split: who keeps the log, and where?")
    turn = wait_done(page)
    steps = turn.locator(".plan-steps .step")
    expect(steps.locator(".step-id")).to_have_text(["#1", "#2", "#3"])
    expect(steps.locator(".tool")).to_have_text(["search"] * 3)
    expect(steps.nth(1).locator(".planned")).to_have_text("q-split where does #1 keep the log books?")
    assert steps.nth(1).get_attribute("data-depends-on") == "1"
    # each search fills its step: the query as searched (#1 filled in) and what it found
    assert [steps.nth(i).get_attribute("data-status") for i in range(3)] == ["done", "done", "done"]
    expect(steps.nth(1).locator(".call-body pre").first).to_contain_text("where does the keeper keep the log books")
    steps.nth(0).locator(".observation summary").click()
    expect(steps.nth(0).locator(".observation pre")).to_contain_text("lighthouse keeper logs every ship")
    expect(turn.locator(".trace .call:not(.step)")).to_have_count(0)  # no search drawn as a tool call
    expect(turn.locator(".t-thought").first).to_contain_text("the keeper")  # the sub-answers
    usage = turn.locator(".usage").inner_text()
    assert "0 tool calls" in usage and "3 searches" in usage
    shot(page, "chat-decompose-plan")


def test_a_planned_step_the_run_never_carried_out_is_shown_as_not_run(page):
    choose(page, "agent:splitter")  # decompose with no documents: its sub-questions are never searched
    ask(page, "q-unsearched: who keeps the log, and where?")
    turn = wait_done(page)
    steps = turn.locator(".plan-steps .step")
    expect(steps).to_have_count(3)
    assert [steps.nth(i).get_attribute("data-status") for i in range(3)] == ["skipped"] * 3
    expect(steps.locator(".badge")).to_have_text(["not run"] * 3)
    assert "0 searches" in turn.locator(".usage").inner_text()


def test_a_tool_call_that_times_out_is_shown_as_timed_out(page):
    choose(page, "agent:stuck")
    ask(page, "q-stuck: look up gamma")
    turn = wait_done(page)
    step = turn.locator(".plan-steps .step")
    expect(step).to_have_attribute("data-status", "timed_out")
    expect(step.locator(".badge")).to_have_text("timed out")
    expect(step.locator(".observation pre")).to_contain_text("tool.timeout")
    expect(turn.locator(".answer")).to_have_text("The dictionary did not answer.")


def test_a_sub_agent_s_events_are_nested_under_the_call_that_started_it(page):
    choose(page, "agent:writer")
    ask(page, "q-writer: who keeps the log?")
    turn = wait_done(page)
    parent = turn.locator(".trace-list > .call").first
    expect(parent.locator(":scope > .call-head .tool")).to_have_text("run_agent")
    nested = parent.locator(":scope > .children .call")
    expect(nested.locator(".tool")).to_have_text("docsearch")
    expect(nested).to_have_attribute("data-status", "done")
    expect(parent.locator(":scope > .children .t-subanswer")).to_contain_text("the keeper")
    expect(turn.locator(".answer")).to_have_text("The researcher says the keeper keeps it.")


def test_clicking_a_citation_shows_the_passage_with_the_quote_highlighted(page):
    choose(page, "reasoning:qa")
    ask(page, "q-cite: who logs the ships?")
    turn = wait_done(page)
    turn.locator(".answer button.cite").click()
    dialog = page.locator("#cite-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#cite-title")).to_have_text("lighthouse")
    expect(dialog.locator("#cite-passage")).to_have_attribute("data-shows", "passage")
    mark = dialog.locator("mark.quote")
    expect(mark).to_contain_text(QUOTE_START)
    passage = dialog.locator("#cite-passage").inner_text()
    assert passage == LIGHTHOUSE  # the whole chunk, the quoted span marked inside it
    assert len(mark.inner_text()) < len(passage)
    shot(page, "citation-highlight")
    dialog.locator("#cite-doc").click()
    expect(page.locator("#view-document")).to_be_visible()
    expect(page.locator("#doc-chunks .chunk.cited")).to_contain_text(QUOTE_START)


def test_stop_ends_the_run_and_keeps_the_partial_answer(page, server):
    choose(page, "reasoning:qa")
    ask(page, "q-stop: tell me everything")
    answer = last_turn(page).locator(".answer")
    expect(answer).to_contain_text("word20", timeout=20_000)
    page.keyboard.press("Escape")
    turn = wait_done(page)
    expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "stopped")
    kept = answer.inner_text()
    assert kept and LONG.startswith(kept) and len(kept) < len(LONG)
    expect(page.locator("#send")).to_be_visible()
    page.wait_for_timeout(300)
    assert answer.inner_text() == kept  # nothing arrives after the stop
    shot(page, "chat-stopped")


def test_reloading_mid_run_resumes_without_a_gap_or_a_repeat(page):
    choose(page, "reasoning:qa")
    ask(page, "q-resume: the tides please")
    expect(last_turn(page).locator(".answer")).to_contain_text("tide10", timeout=20_000)
    page.reload()
    turn = last_turn(page)
    expect(turn.locator(".q")).to_have_text("q-resume: the tides please")
    expect(page.locator("#stop")).to_be_visible()  # still running, and followed live
    wait_done(page)
    assert turn.locator(".answer").inner_text() == RESUME
    assert page.locator("#turns .turn").count() == 1


NAMES = ("quay rules.txt", "tides.md", "huge.txt", "tool.bin")


def test_two_files_upload_with_progress_then_an_answer_cites_one(page, server, tmp_path):
    page.click("a[data-view=documents]")
    expect(page.locator("#kb-stats")).to_contain_text("documents")
    page.evaluate(
        """() => { window.__states = {};
        new MutationObserver(() => { for (const li of document.querySelectorAll('#uploads .upload')) {
            const name = li.querySelector('.name').textContent;
            (window.__states[name] ||= new Set()).add(li.dataset.state + ':' + li.querySelector('.state').textContent);
        } }).observe(document.getElementById('uploads'), {subtree: true, childList: true, characterData: true, attributes: true}); }"""
    )
    quay = tmp_path / "quay rules.txt"
    quay.write_text(HOSTILE_DOC + " " + " ".join(f"Rule {i}: keep the quay clear." for i in range(50)), "utf-8")
    tides = tmp_path / "tides.md"
    tides.write_text("# Tides\n\n" + "\n\n".join(f"High water at pier {i} is at dawn." for i in range(40)), "utf-8")
    big = tmp_path / "huge.txt"
    big.write_text("x" * 30_000, "utf-8")  # over this server's 20,000-byte limit
    page.set_input_files("#file-input", [str(quay), str(tides), str(big)])
    dropped = page.evaluate_handle(
        "() => { const dt = new DataTransfer(); dt.items.add(new File(['\\u0000\\u0001'], 'tool.bin')); return dt; }"
    )
    page.dispatch_event("#drop", "drop", {"dataTransfer": dropped})  # dragged and dropped
    rows = page.locator("#uploads .upload")
    expect(rows).to_have_count(4)
    for name in ("quay rules.txt", "tides.md"):
        expect(rows.filter(has_text=name)).to_have_attribute("data-state", "done", timeout=60_000)
    expect(rows.filter(has_text="huge.txt")).to_have_attribute("data-state", "failed")
    expect(rows.filter(has_text="huge.txt").locator(".state")).to_contain_text("too large")
    expect(rows.filter(has_text="tool.bin")).to_have_attribute("data-state", "failed")
    expect(rows.filter(has_text="tool.bin").locator(".state")).to_contain_text("unsupported file type '.bin'")
    bars = {name: rows.filter(has_text=name).locator("progress").evaluate("p => p.value") for name in NAMES}
    assert bars == {"quay rules.txt": 1, "tides.md": 1, "huge.txt": 0, "tool.bin": 0}
    states = page.evaluate("() => Object.fromEntries(Object.entries(window.__states).map(([k, v]) => [k, [...v]]))")
    for name in ("quay rules.txt", "tides.md"):
        seen = states[name]
        assert any(s.startswith("uploading:uploading") for s in seen), seen
        assert any(s.startswith("ingesting:embedding") for s in seen), seen  # chunks embedded so far
    expect(page.locator("#doc-rows tr")).to_have_count(3)
    expect(page.locator("#doc-rows")).to_contain_text("quay rules")
    shot(page, "documents-upload")
    page.click("a[data-view=chat]")
    choose(page, "reasoning:qa")
    ask(page, "q-upload: where do boats moor?")
    turn = wait_done(page)
    expect(turn.locator(".sources")).to_contain_text("quay")


def test_a_document_is_deleted_from_the_list(page):
    page.click("a[data-view=documents]")
    rows = page.locator("#doc-rows tr")
    expect(rows).to_have_count(3)
    stats = page.locator("#kb-stats").inner_text()
    page.on("dialog", lambda d: d.accept())
    rows.filter(has_text="Tides").locator("button").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#doc-rows")).not_to_contain_text("Tides")
    expect(page.locator("#kb-stats")).not_to_have_text(stats)
    expect(page.locator("#kb-stats")).to_contain_text("2 documents")


def test_a_setting_is_honoured_by_the_run(page):
    choose(page, "reasoning:react")
    page.fill("#setting-max_rounds", "1")
    ask(page, "q-budget: what about the reef?")
    turn = wait_done(page)
    expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "max_rounds")
    expect(turn.locator(".t-stop")).to_have_text("round budget reached")
    expect(turn.locator(".trace .call")).to_have_count(1)
    page.click("#settings-reset")


def test_a_guard_stop_is_shown_as_such(page):
    choose(page, "reasoning:react")
    page.check("#setting-require_tool_call")
    ask(page, "q-guard: answer from memory")
    turn = wait_done(page)
    expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "guard")
    expect(turn.locator(".t-stop")).to_have_text("stopped by a guard")
    page.click("#settings-reset")


def test_bounds_are_enforced_and_the_servers_422_is_shown_at_its_field(page):
    choose(page, "reasoning:react")
    field = page.locator("#setting-max_rounds")
    assert field.get_attribute("min") == "1"  # the schema's bound
    field.fill("0")
    turns_before = page.locator("#turns .turn").count()
    ask(page, "q-react: never asked")
    row = page.locator(".field[data-field=max_rounds]")
    expect(row).to_have_class("field invalid")
    assert page.locator("#turns .turn").count() == turns_before  # refused before any request
    page.evaluate("() => document.getElementById('setting-max_rounds').removeAttribute('min')")
    page.click("#send")
    expect(row.locator(".field-error")).to_contain_text(
        "settings.max_rounds: Input should be greater than or equal to 1"
    )
    expect(page.locator("#composer-error")).to_be_visible()
    assert page.locator("#turns .turn").count() == turns_before
    shot(page, "settings-422")
    page.click("#settings-reset")


def test_a_nested_settings_object_is_a_group_sent_nested_with_its_422_at_its_field(page):
    choose(page, "reasoning:qa")
    group = page.locator("fieldset[data-group=retrieval]")
    expect(group.locator("legend")).to_have_text("Retrieval")
    field = group.locator("[id='setting-retrieval.multi_query']")
    assert field.get_attribute("max") == "5"  # the nested schema's bound
    assert group.locator("[id='setting-retrieval.rerank'] option").all_inner_texts() == ["—", "on", "off"]
    page.evaluate("() => document.getElementById('setting-retrieval.multi_query').removeAttribute('max')")
    field.fill("9")
    turns_before = page.locator("#turns .turn").count()
    ask(page, "q-react: never asked")
    row = page.locator(".field[data-field='retrieval.multi_query']")
    expect(row.locator(".field-error")).to_contain_text(
        "settings.retrieval.multi_query: Input should be less than or equal to 5"
    )
    assert page.locator("#turns .turn").count() == turns_before
    shot(page, "settings-nested")
    page.click("#settings-reset")


def test_settings_have_labels_descriptions_and_readable_defaults(page):
    choose(page, "reasoning:react")
    schema = ReActReasoning.Settings.model_json_schema()["properties"]
    names = page.locator("#settings-form .field .name").all_inner_texts()
    assert names == [field["title"] for field in schema.values()]  # "Time limit (s)", not "Timeout S"
    rounds = page.locator(".field[data-field=max_rounds]")
    expect(rounds.locator(".hint")).to_contain_text(schema["max_rounds"]["description"])
    expect(rounds.locator(".default")).to_have_text("default: 6")
    expect(page.locator(".field[data-field=timeout_s] .default")).to_have_text("default: none")
    expect(page.locator(".field[data-field=require_tool_call] .default")).to_have_text("default: off")
    assert "null" not in page.locator("#settings-form").inner_text()
    expect(page.locator("#strategy-desc")).to_have_text(PluginInfo.declared("reasoning", "react").description)


def test_strategies_and_settings_are_in_chinese_in_the_chinese_interface(browser, server):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 1400})
    page = context.new_page()
    page.goto(server.url)
    qa = PluginInfo.declared("reasoning", "qa").translations["zh"]
    expect(page.locator("#strategy option[value='reasoning:qa']")).to_have_text(f"{qa.name} (qa)")
    page.select_option("#strategy", "reasoning:qa")
    expect(page.locator("#strategy-desc")).to_have_text(qa.description)
    group = page.locator("fieldset[data-group=retrieval]")
    expect(group.locator("legend")).to_have_text("检索")
    assert group.locator("[id='setting-retrieval.rerank'] option").all_inner_texts() == ["—", "开", "关"]
    expect(page.locator(".field[data-field='retrieval.rerank_candidates'] .default")).to_have_text("默认：无")
    page.select_option("#strategy", "reasoning:rewoo")
    schema = ReWOOReasoning.Settings.model_json_schema()["properties"]
    in_chinese = [field["x-translations"]["zh"] for field in schema.values()]
    assert page.locator("#settings-form .field .name").all_inner_texts() == [z["title"] for z in in_chinese]
    hints = page.locator("#settings-form .field .hint").all_inner_texts()
    assert [h.splitlines()[0] for h in hints] == [z["description"] for z in in_chinese]
    shot(page, "settings-chinese")
    page.select_option("#lang", "en")  # the open form and the picker change language at once
    expect(page.locator("#strategy option[value='reasoning:qa']")).to_have_text("Retrieval QA (qa)")
    expect(page.locator(".field[data-field=max_rounds] .name")).to_have_text(schema["max_rounds"]["title"])
    context.close()


def test_hostile_content_renders_as_text_under_a_policy_without_inline_script(page, server):
    response = httpx.get(server.url + "/", timeout=10)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    choose(page, "reasoning:qa")
    ask(page, "q-hostile: <img src=x onerror=\"window.__pwned='question'\">")
    turn = wait_done(page)
    answer = turn.locator(".answer")
    expect(answer).to_contain_text("<script>window.__pwned = 'answer'</script>")
    expect(answer).to_contain_text("<img src=x onerror=")
    assert answer.locator("script, img, iframe, details, object, embed").count() == 0
    assert answer.locator("a[href^='javascript']").count() == 0
    expect(turn.locator(".q")).to_have_text("q-hostile: <img src=x onerror=\"window.__pwned='question'\">")
    page.click("a[data-view=documents]")
    expect(page.locator("#doc-rows")).to_contain_text("quay rules")
    page.locator("#doc-rows a", has_text="quay rules").click()
    chunks = page.locator("#doc-chunks")
    expect(chunks).to_contain_text("<script>window.__pwned = 'doc'</script>")
    assert chunks.locator("script, img").count() == 0
    # A script the page did not come with is refused even when it reaches the DOM.
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = \"window.__pwned='inline'\";"
        " document.body.append(s); }"
    )
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.__pwned") is None


def test_a_failed_run_shows_its_code_and_message_and_keeps_the_partial_answer(page):
    choose(page, "reasoning:qa")
    ask(page, "q-fail: please")
    turn = wait_done(page)
    expect(turn.locator(".run-error")).to_contain_text("llm.bad_response")
    expect(turn.locator(".run-error")).to_contain_text("broke off mid-answer")
    expect(turn.locator(".answer")).to_have_text("A partial answer before the break")
    expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "error")


def test_feedback_copy_and_regenerate(page, server):
    choose(page, "reasoning:qa")
    ask(page, "q-cite: who logs the ships?")
    turn = wait_done(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    turn.locator(".copy").click()
    expect(turn.locator(".copy")).to_have_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == turn.locator(".answer").inner_text()
    with page.expect_response(lambda r: r.url.endswith("/v1/feedback")) as posted:
        turn.locator(".down").click()
        turn.locator(".fb-reason input").fill("too short")
        turn.locator(".fb-reason button").click()
    assert posted.value.status == 201
    body = posted.value.request.post_data_json
    assert body["rating"] == -1 and body["comment"] == "too short" and body["run_id"].startswith("run_")
    expect(turn.locator(".fb-done")).to_have_text("Thanks for the feedback")
    turn.locator(".regen").click()
    expect(page.locator("#turns .turn")).to_have_count(2)
    second = wait_done(page)
    expect(second.locator(".q")).to_have_text("q-cite: who logs the ships?")


def test_conversations_are_listed_renamed_deleted_and_survive_a_restart(page, server):
    choose(page, "reasoning:qa")
    page.click("#new-conv")
    ask(page, "q-cite: who logs the ships in the story?")
    wait_done(page)
    current = page.locator("#conv-list .conv.current")
    expect(current).to_contain_text("q-cite: who logs the ships in the story?")
    current.locator(".conv-rename").click()
    page.fill("#conv-list .conv-edit", "Ship logs 船")
    page.keyboard.press("Enter")
    expect(page.locator("#conv-list .conv.current .conv-title")).to_have_text("Ship logs 船")
    server.restart()
    page.reload()
    expect(page.locator("#conv-list .conv-title", has_text="Ship logs 船")).to_be_visible()
    turn = wait_done(page)  # the conversation's history, read back from the server after its restart
    expect(turn.locator(".answer")).to_have_text("Every ship that passes the reef is logged by the keeper [1].")
    expect(turn.locator(".sources")).to_contain_text("lighthouse")
    page.on("dialog", lambda d: d.accept())
    page.locator("#conv-list .conv", has_text="Ship logs 船").locator(".conv-delete").click()
    expect(page.locator("#conv-list .conv-title", has_text="Ship logs 船")).to_have_count(0)
    page.reload()
    expect(page.locator("#conv-list .conv-title", has_text="Ship logs 船")).to_have_count(0)


def test_the_page_says_when_the_server_is_unreachable_and_reconnects(page, server):
    server.stop()
    try:
        page.click("#new-conv")
        ask(page, "q-cite: anyone there?")
        expect(page.locator("#status")).to_have_text("Server unreachable, reconnecting…")
        expect(page.locator("#composer-error")).to_have_text("Server unreachable, reconnecting…")
        shot(page, "server-unreachable")
    finally:  # the module's other tests share the server
        server.start()
    expect(page.locator("#status")).to_have_text("Reconnected", timeout=15_000)
    page.click("#send")
    wait_done(page)


@pytest.mark.parametrize("crash", [False, True], ids=["shut-down", "killed"])
def test_a_run_cut_off_by_a_server_restart_ends_with_its_partial_answer_or_goes_on(page, server, crash):
    choose(page, "reasoning:qa")
    page.click("#new-conv")
    ask(page, f"q-restart: a long story ({crash})")
    answer = last_turn(page).locator(".answer")
    expect(answer).to_contain_text("word15", timeout=20_000)
    server.stop(kill=crash)
    try:
        if crash:  # the stream breaks: the page notices the server is gone
            expect(page.locator("#status")).to_have_text("Server unreachable, reconnecting…")
        # a server that shuts down ends its runs first: the stream closes with the interrupted answer,
        # and the page learns the server is gone only if it asks it something before it is back
    finally:
        server.start()  # the next tests share this server
    turn = wait_done(page, timeout=90_000)
    if crash:  # the restarted server takes the run over: the answer starts over there and completes
        expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "final")
        expect(turn.locator(".trace-list li", has_text="another one goes on")).to_have_count(1)
        assert answer.inner_text().strip() == LONG  # said once, not the part before the crash and then all of it
    else:
        expect(turn.locator(".usage")).to_have_attribute("data-stop-reason", "interrupted")
        kept = answer.inner_text()
        assert kept.startswith("word0 word1") and LONG.startswith(kept) and len(kept) < len(LONG)
    expect(page.locator("#status")).to_be_hidden(timeout=10_000)


def test_the_retrieval_test_shows_three_rankings_with_scores(page):
    page.click("a[data-view=search]")
    page.fill("#search-q", "fog signal in winter storms")
    page.click("#search-form button[type=submit]")
    for mode in ("lexical", "dense", "hybrid"):
        hits = page.locator(f"#hits-{mode} .hit")
        expect(hits.first).to_be_visible()
        expect(hits.first.locator(".score")).to_have_text(re.compile(r"^score \d+\.\d{4}$"))
    expect(page.locator("#hits-lexical .hit").first).to_contain_text("fog signal")
    shot(page, "retrieval-test")


def test_the_chinese_interface(browser, server):
    context = browser.new_context(locale="zh-CN", viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(server.url)
    expect(page.locator("a[data-view=chat]")).to_have_text("对话")
    expect(page.locator("#send")).to_have_text("发送")
    expect(page.locator("#new-conv")).to_have_text("新对话")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    page.select_option("#strategy", "reasoning:qa")
    page.click("#new-conv")
    ask(page, "q-zh: 灯塔看守人记录什么？")
    turn = wait_done(page)
    expect(turn.locator(".answer")).to_contain_text("灯塔看守人记录每一艘经过北方暗礁的船只")
    expect(turn.locator(".usage")).to_contain_text("次模型调用")
    expect(turn.locator(".trace-label")).to_have_text("推理过程")
    shot(page, "chat-chinese")
    page.select_option("#lang", "en")
    expect(page.locator("a[data-view=chat]")).to_have_text("Chat")
    expect(turn.locator(".copy")).to_have_text("Copy")
    context.close()
