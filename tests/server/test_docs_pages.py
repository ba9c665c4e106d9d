"""/docs and /redoc work offline: every script, style and icon they use is served by the app itself."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest

from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.llm_runner import LLMRunner
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.inline.append(data)


@pytest.fixture
async def client(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=LLMRunner(lambda: ScriptedProvider(replies=["x"])))
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as http:
        yield http


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_the_api_pages_reference_nothing_outside_the_server(client, page):
    response = await client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    refs = _References()
    refs.feed(response.text)
    assert refs.urls, response.text
    scripts = "\n".join(refs.inline)
    outside = [u for u in refs.urls if re.match(r"^(https?:)?//", u)]
    outside += re.findall(r"""["'](?:https?:)?//[^"']+["']""", scripts)
    assert outside == [], outside
    for url in refs.urls:  # each asset is there, and not empty
        asset = await client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 1000, url
    assert "/openapi.json" in response.text


async def test_swagger_ui_asks_no_outside_validator(client):
    page = (await client.get("/docs")).text
    assert '"validatorUrl": null' in page
    assert (await client.get("/openapi.json")).status_code == 200
    assert "/docs" not in (await client.get("/openapi.json")).json()["paths"]
