"""The web UI shows the model in use, found on the server's machine, and offers the others there:
a real ``reasonloop serve`` with ``[llm] provider = "auto"`` finds a loopback server speaking
Ollama's API, and a run answers with the model picked in the page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.environment import DISCOVERY_OFF
from tests.llm.fixtures.local_servers import OLLAMA_MODELS, closed_port, ollama_app, serving_in_thread
from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)


@pytest.fixture(scope="module")
def ollama() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []
    with serving_in_thread(ollama_app(OLLAMA_MODELS, seen)) as port:
        yield port, seen


@pytest.fixture(scope="module")
def server(tmp_path_factory, ollama) -> Iterator[Server]:
    port, _ = ollama
    srv = Server(tmp_path_factory.mktemp("served-models"), {})
    config = srv.config.read_text(encoding="utf-8")
    llm = (
        f'[llm]\nprovider = "auto"\ndiscover = true\ndiscover_ollama_ports = [{port}]\n'
        f'discover_openai_ports = [{closed_port()}]\nollama_url = "http://127.0.0.1:{port}"\nmax_retries = 0\n'
    )
    srv.config.write_text(re.sub(r"\[llm\]\n(?:.+\n)+?\n", llm + "\n", config, count=1), encoding="utf-8")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(DISCOVERY_OFF, "true")  # the file's setting, not the test run's
        srv.start()
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


def test_the_page_shows_the_model_in_use_and_a_run_answers_with_another_one_picked(page, ollama):
    port, seen = ollama
    select = page.locator("#model")
    expect(select.locator("option").first).to_have_text("ollama:llama3.2:3b (in use)")
    expect(page.locator("#model-desc")).to_have_text(
        "Found on the server's machine (choose another here, or set [llm] in reasonloop.toml): "
        f"http://127.0.0.1:{port} · tool calls · 131072 tokens of context"
    )
    offered = select.locator("optgroup option")
    # every chat model the server lists; the embedding model is not offered
    expect(offered).to_have_count(4)
    expect(offered.nth(0)).to_have_text("ollama:llama3.2:3b (instruction-tuned)")
    expect(offered.nth(1)).to_have_text("ollama:llama3:text (base model)")
    expect(offered.nth(3)).to_have_text("ollama:mystery-7b-instruct (instruction-tuned)")
    page.screenshot(path=str(screenshot_dir() / "models-in-use.png"))
    expect(select.locator("option", has_text="nomic-embed")).to_have_count(0)

    page.select_option("#model", f"ollama:llama3.2:3b@127.0.0.1:{port}")
    expect(page.locator("#model-desc")).to_have_text(f"http://127.0.0.1:{port} · tool calls · 131072 tokens of context")
    page.select_option("#model", f"ollama:phi3:mini@127.0.0.1:{port}")
    expect(page.locator("#model-desc")).to_have_text(f"http://127.0.0.1:{port} · no tool calls")
    page.select_option("#strategy", "reasoning:react")
    page.fill("#question", "What is the capital of France?")
    page.click("#send")
    turn = page.locator("#turns .turn").last
    expect(turn.locator(".answer")).to_contain_text("Paris")
    expect(turn.locator(".usage")).not_to_be_empty()
    assert "/api/chat phi3:mini" in seen and "/api/chat llama3.2:3b" not in seen
    page.screenshot(path=str(screenshot_dir() / "models-picked.png"))

    page.reload()  # the pick is remembered
    expect(page.locator("#model")).to_have_value(f"ollama:phi3:mini@127.0.0.1:{port}")
    page.select_option("#model", "")
    expect(page.locator("#model-desc")).to_contain_text("Found on the server's machine")
