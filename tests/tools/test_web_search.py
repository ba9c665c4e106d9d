"""web_search backends and wikipedia against local servers answering in each API's format."""

import pytest

from reasonloop.config import ToolsSettings, WebSearchSettings, WikipediaSettings
from reasonloop.errors import ConfigError
from reasonloop.tools.base import ToolContext
from reasonloop.tools.configured import configured_tools
from reasonloop.tools.web_search import WebSearchTool
from reasonloop.tools.wikipedia import WikipediaTool
from tests.tools.http_fixtures import LocalHTTPServer, Reply

CTX = ToolContext()

SEARXNG = {
    "query": "rust",
    "number_of_results": 0,
    "results": [
        {
            "url": "https://www.rust-lang.org/",
            "title": "Rust",
            "content": "A <span>language</span> empowering everyone",
            "engine": "duckduckgo",
            "score": 4.0,
        },
        {
            "url": "https://en.wikipedia.org/wiki/Rust",
            "title": "Rust - Wikipedia",
            "content": "Rust is an iron oxide",
            "engine": "wikipedia",
            "score": 1.0,
        },
    ],
    "answers": [],
    "infoboxes": [],
}
BRAVE = {
    "type": "search",
    "query": {"original": "rust"},
    "web": {
        "type": "search",
        "results": [
            {
                "type": "search_result",
                "title": "Rust Programming Language",
                "url": "https://www.rust-lang.org/",
                "description": "A language <strong>empowering</strong> everyone",
                "language": "en",
            },
        ],
    },
}
TAVILY = {
    "query": "rust",
    "answer": "Rust is a systems programming language.",
    "results": [
        {
            "title": "Rust",
            "url": "https://www.rust-lang.org/",
            "content": "Fast and memory-efficient",
            "score": 0.98,
            "raw_content": None,
        }
    ],
    "response_time": 1.2,
}
SERPER = {
    "searchParameters": {"q": "rust", "type": "search", "engine": "google"},
    "organic": [
        {
            "title": "Rust Programming Language",
            "link": "https://www.rust-lang.org/",
            "snippet": "Fast, reliable, productive",
            "position": 1,
        },
        {"title": "Rust (video game)", "link": "https://rust.facepunch.com/", "snippet": "Survive", "position": 2},
    ],
}


def search_tool(backend, srv, **kw):
    return WebSearchTool(WebSearchSettings(backend=backend, base_url=srv.url, api_key_env="RL_TEST_SEARCH_KEY", **kw))


@pytest.fixture(autouse=True)
def search_key(monkeypatch):
    monkeypatch.setenv("RL_TEST_SEARCH_KEY", "k-123")


async def test_searxng():
    with LocalHTTPServer(lambda seen: Reply(200, SEARXNG)) as srv:
        out = await search_tool("searxng", srv).invoke({"query": "rust"}, CTX)
    assert out.ok, out.error
    seen = srv.seen[0]
    assert (seen.method, seen.path, seen.query) == ("GET", "/search", {"q": ["rust"], "format": ["json"]})
    assert [c.source for c in out.citations] == ["https://www.rust-lang.org/", "https://en.wikipedia.org/wiki/Rust"]
    assert "[1] Rust\nhttps://www.rust-lang.org/\nA language empowering everyone" in out.text


async def test_brave():
    with LocalHTTPServer(lambda seen: Reply(200, BRAVE)) as srv:
        out = await search_tool("brave", srv, max_results=3).invoke({"query": "rust"}, CTX)
    seen = srv.seen[0]
    assert seen.path == "/res/v1/web/search" and seen.query == {"q": ["rust"], "count": ["3"]}
    assert seen.headers["x-subscription-token"] == "k-123"
    assert out.data == [
        {
            "title": "Rust Programming Language",
            "url": "https://www.rust-lang.org/",
            "snippet": "A language empowering everyone",
        }
    ]


async def test_tavily():
    with LocalHTTPServer(lambda seen: Reply(200, TAVILY)) as srv:
        out = await search_tool("tavily", srv, max_results=2).invoke({"query": "rust"}, CTX)
    seen = srv.seen[0]
    assert (seen.method, seen.path) == ("POST", "/search")
    assert seen.json() == {"query": "rust", "max_results": 2}
    assert seen.headers["authorization"] == "Bearer k-123"
    assert out.text.startswith("Summary from the search engine: Rust is a systems programming language.")
    assert out.citations[0].quote == "Fast and memory-efficient"


async def test_serper_and_result_limit():
    with LocalHTTPServer(lambda seen: Reply(200, SERPER)) as srv:
        out = await search_tool("serper", srv, max_results=1).invoke({"query": "rust"}, CTX)
    seen = srv.seen[0]
    assert seen.json() == {"q": "rust", "num": 1} and seen.headers["x-api-key"] == "k-123"
    assert len(out.citations) == 1 and out.citations[0].source == "https://www.rust-lang.org/"


async def test_no_results_is_said_plainly():
    with LocalHTTPServer(lambda seen: Reply(200, {"results": []})) as srv:
        out = await search_tool("searxng", srv).invoke({"query": "zzzz"}, CTX)
    assert out.ok and out.text == "No results for 'zzzz'."


@pytest.mark.parametrize(
    "reply,code",
    [(Reply(401, {"error": "bad key"}), "tool.network"), (Reply(200, "<html>not json</html>"), "tool.network")],
)
async def test_backend_failures_are_observations(reply, code):
    with LocalHTTPServer(lambda seen: reply) as srv:
        out = await search_tool("brave", srv).invoke({"query": "rust"}, CTX)
    assert out.error["code"] == code


async def test_unreachable_backend():
    with LocalHTTPServer(lambda seen: Reply(200, {})) as srv:
        url = srv.url
    tool = WebSearchTool(WebSearchSettings(backend="searxng", base_url=url))
    assert (await tool.invoke({"query": "x"}, CTX)).error["code"] == "tool.network"


async def test_missing_key_at_call_time(monkeypatch):
    monkeypatch.delenv("RL_TEST_SEARCH_KEY")
    with LocalHTTPServer(lambda seen: Reply(200, BRAVE)) as srv:
        out = await search_tool("brave", srv).invoke({"query": "rust"}, CTX)
    assert out.error["code"] == "tool.error" and "RL_TEST_SEARCH_KEY" in out.error["error"]
    assert srv.seen == []


def test_incomplete_configuration_is_refused():
    with pytest.raises(ConfigError, match="base_url"):
        WebSearchTool(WebSearchSettings(backend="searxng"))
    with pytest.raises(ConfigError, match="api_key_env"):
        WebSearchTool(WebSearchSettings(backend="tavily"))


WIKI = {
    "batchcomplete": True,
    "query": {
        "pages": [
            {
                "pageid": 2,
                "ns": 0,
                "title": "Ada Lovelace",
                "index": 2,
                "extract": "Augusta Ada King was an English mathematician.",
                "fullurl": "https://en.wikipedia.org/wiki/Ada_Lovelace",
            },
            {
                "pageid": 1,
                "ns": 0,
                "title": "Ada (programming language)",
                "index": 1,
                "extract": "Ada is a structured language. " * 100,
                "fullurl": "https://en.wikipedia.org/wiki/Ada_(programming_language)",
            },
        ]
    },
}


async def test_wikipedia_search_and_extracts():
    with LocalHTTPServer(lambda seen: Reply(200, WIKI)) as srv:
        tool = WikipediaTool(WikipediaSettings(enabled=True, base_url=srv.url + "/w/api.php", max_results=2))
        out = await tool.invoke({"query": "ada"}, CTX)
    assert out.ok, out.error
    q = srv.seen[0].query
    assert srv.seen[0].path == "/w/api.php"
    assert q["action"] == ["query"] and q["generator"] == ["search"] and q["gsrsearch"] == ["ada"]
    assert q["gsrlimit"] == ["2"] and q["prop"] == ["extracts|info"] and q["format"] == ["json"]
    assert [c.title for c in out.citations] == ["Ada (programming language)", "Ada Lovelace"]  # search rank
    assert len(out.citations[0].quote) <= 300 and out.data[0]["snippet"].endswith("…")
    assert len(out.data[0]["snippet"]) < 1600


async def test_wikipedia_without_matches():
    with LocalHTTPServer(lambda seen: Reply(200, {"batchcomplete": True})) as srv:
        out = await WikipediaTool(WikipediaSettings(enabled=True, base_url=srv.url)).invoke({"query": "qqq"}, CTX)
    assert out.ok and out.text == "No results for 'qqq'."


def test_only_configured_tools_are_offered():
    assert configured_tools(ToolsSettings()) == []
    on = ToolsSettings(
        http={"enabled": True},
        web_search={"backend": "searxng", "base_url": "http://127.0.0.1:1"},
        wikipedia={"enabled": True},
    )
    assert [t.name for t in configured_tools(on)] == ["http_request", "web_search", "wikipedia"]
    assert [t.name for t in configured_tools(ToolsSettings(wikipedia={"enabled": True}))] == ["wikipedia"]
