"""A citation in headless Chromium: its passage with exactly the quoted sentence marked, the page
image of a PDF with the quote highlighted, the fallbacks, and the default strategy.

The answers come from the ``quote_sentence`` test strategy (tests/webui/scripted.py), which cites
one sentence with its offsets as an answer does, so these tests do not depend on how the built-in
strategies choose their sentences.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from reasonloop.defaults import DEFAULT_REASONING
from tests.kb.documents import text_pdf
from tests.webui.harness import EXPECT_TIMEOUT_MS, Server, screenshot_dir

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

HOSTILE_QUOTE = "Visitors tie up at the <img src=x onerror=\"window.__pwned='cite'\"> gangway marked in red."
MOORING = f"Mooring notes for visitors. {HOSTILE_QUOTE} The harbour master keeps the keys <b>on weekdays</b>."
PDF_LINES = [
    "Dock safety rules for the west basin.",
    *(f"Berth {i} is kept clear for the pilot boat." for i in range(1, 31)),
    "Every bollard is inspected each spring. Ropes are replaced yearly.",
    "Boats leave the basin before the tide turns.",
]
"""A page whose quoted sentence is far down, below the part of the page image the dialog first shows."""
PDF_QUOTE = "Every bollard is inspected each spring."


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("cite"), {})
    srv.start()
    srv.ingest({"mooring.txt": MOORING, "dock rules.pdf": text_pdf(["\n".join(PDF_LINES)])})
    yield srv
    srv.stop()


def open_page(browser, server: Server, locale: str) -> tuple[object, Page, list[str]]:
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url)
    expect(page.locator("#strategy option").first).to_be_attached()
    return context, page, errors


@pytest.fixture
def page(browser, server) -> Iterator[Page]:
    context, pg, errors = open_page(browser, server, "en-US")
    yield pg
    context.close()
    assert not errors, errors


def shot(page: Page, name: str) -> Path:
    path = screenshot_dir() / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def cite(page: Page, word: str):
    """Ask the quoting strategy about ``word``, open the answer's citation; the dialog."""
    page.select_option("#strategy", "reasoning:quote_sentence")
    page.fill("#question", f"Where is the {word}")
    page.click("#send")
    turn = page.locator("#turns .turn").last
    expect(turn.locator(".usage")).not_to_be_empty()
    turn.locator(".answer button.cite").click()
    dialog = page.locator("#cite-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#cite-passage")).to_have_attribute("data-shows", "passage")  # not the quote alone
    return dialog


def page_text(image_url: str) -> str:
    """The text of the page whose image ``image_url`` is."""
    return httpx.get(image_url.split("/image", 1)[0], timeout=30).json()["text"]


def test_the_web_ui_starts_on_the_default_strategy(page):
    assert page.locator("#strategy").input_value() == f"reasoning:{DEFAULT_REASONING}"


def test_a_citation_shows_its_passage_with_exactly_the_quoted_sentence_marked(page):
    dialog = cite(page, "gangway")
    passage = dialog.locator("#cite-passage")
    mark = passage.locator("mark.quote")
    expect(mark).to_have_text(HOSTILE_QUOTE)  # the sentence, all of it and nothing more
    expect(passage).to_have_text(MOORING)  # inside the whole passage, as text
    assert mark.count() == 1
    assert passage.locator("img, b, script").count() == 0  # the document's markup stayed text
    expect(dialog.locator("#cite-title")).to_have_text("mooring")
    assert dialog.locator("#cite-note").is_hidden()
    assert dialog.locator("#cite-page").is_hidden()  # a text file has no page image
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.__pwned") is None
    shot(page, "citation-sentence")


def test_a_pdf_citation_offers_its_page_with_the_quote_highlighted(page):
    dialog = cite(page, "bollard")
    expect(dialog.locator("#cite-passage mark.quote")).to_have_text(PDF_QUOTE)
    passage = dialog.locator("#cite-passage").inner_text()
    assert PDF_QUOTE in passage and passage in "\n".join(PDF_LINES) and passage.endswith(PDF_LINES[-1])
    expect(dialog.locator("#cite-meta")).to_contain_text("page 1")
    summary = dialog.locator("#cite-page summary")
    expect(summary).to_have_text("Show it on the page")
    with page.expect_response(lambda r: "/pages/1/image" in r.url) as rendered:
        summary.click()
    response = rendered.value
    assert response.status == 200 and response.headers["content-type"] == "image/png"
    text = page_text(response.url)
    start = text.index(PDF_QUOTE)
    assert f"start={start}&end={start + len(PDF_QUOTE)}" in response.url  # the quote's span, not the passage's
    page.wait_for_function(
        "() => { const i = document.getElementById('cite-image'); return i.complete && i.naturalWidth > 0; }"
    )
    expect(dialog.locator("#cite-image")).to_have_attribute("alt", "Page 1, the quoted text highlighted")
    expect(dialog.locator("#cite-anchor")).to_be_in_viewport()  # scrolled down to the highlight
    shot(page, "citation-pdf-page")


def test_without_offsets_that_fit_or_without_the_page_the_quote_is_shown_alone(page, server):
    show = (
        "async (c) => { const m = await import('./ui/documents.js'); await m.showCitation(c); "
        "return [document.getElementById('cite-passage').innerHTML, document.getElementById('cite-note').textContent]; }"
    )
    web = {"marker": 1, "source": "https://example.org/tides", "quote": "High water is at <i>dawn</i>."}
    html, note = page.evaluate(show, web)
    assert html == '<mark class="quote">High water is at &lt;i&gt;dawn&lt;/i&gt;.</mark>' and note == ""
    expect(page.locator("#cite-passage")).to_have_attribute("data-shows", "quote")
    assert page.locator("#cite-doc").is_hidden()  # nothing of the knowledge base to open
    page.keyboard.press("Escape")
    gone = {"marker": 1, "document_id": "no-such-document", "quote": "A sentence.", "start": 0, "end": 11}
    html, note = page.evaluate(show, gone)
    assert html == '<mark class="quote">A sentence.</mark>'
    assert note == "The document is no longer in the knowledge base."
    expect(page.locator("#cite-passage")).to_have_attribute("data-shows", "quote")
    page.keyboard.press("Escape")
    docs = httpx.get(f"{server.url}/v1/kb/documents", timeout=30).json()
    mooring = next(d["id"] for d in docs if d["source"].endswith("mooring.txt"))
    # Offsets from before the document changed: they no longer hold the quote.
    moved = {"marker": 1, "document_id": mooring, "quote": "Not in the text.", "start": 0, "end": 16}
    html, note = page.evaluate(show, moved | {"chunk_start": 0, "chunk_end": 40})
    assert html == '<mark class="quote">Not in the text.</mark>'
    assert note == "The passage could not be shown: this is the quoted text alone."


def test_the_citation_view_in_chinese(browser, server):
    context, page, errors = open_page(browser, server, "zh-CN")
    dialog = cite(page, "bollard")
    expect(dialog.locator("#cite-passage mark.quote")).to_have_text(PDF_QUOTE)
    expect(dialog.locator("#cite-meta")).to_contain_text("第 1 页")
    expect(dialog.locator("#cite-page summary")).to_have_text("在页面上查看")
    expect(dialog.locator("#cite-doc")).to_have_text("打开整篇文档")
    dialog.locator("#cite-page summary").click()
    page.wait_for_function(
        "() => { const i = document.getElementById('cite-image'); return i.complete && i.naturalWidth > 0; }"
    )
    expect(dialog.locator("#cite-image")).to_have_attribute("alt", "第 1 页，引用的文字已高亮")
    shot(page, "citation-chinese")
    context.close()
    assert not errors, errors
