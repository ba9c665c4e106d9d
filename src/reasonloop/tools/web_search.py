"""``web_search(query)``: results from a search API chosen in the config.

Backends (``[tools.web_search] backend``), each with its documented request and response:

- ``searxng``: ``GET {base_url}/search?q=...&format=json`` -> ``results[].{title,url,content}``
  (a SearXNG instance of your own; ``base_url`` is required).
- ``brave``: ``GET {base_url}/res/v1/web/search?q=...&count=N`` with ``X-Subscription-Token``
  -> ``web.results[].{title,url,description}``.
- ``tavily``: ``POST {base_url}/search`` ``{"query", "max_results"}`` with ``Authorization:
  Bearer`` -> ``results[].{title,url,content}`` (plus an optional ``answer``).
- ``serper``: ``POST {base_url}/search`` ``{"q", "num"}`` with ``X-API-KEY`` ->
  ``organic[].{title,link,snippet}``.

Results come back as numbered text for the model and as citations (URL, title, snippet).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import httpx
from pydantic import BaseModel, ConfigDict, Field

from reasonloop.config import WebSearchSettings, secret
from reasonloop.errors import ConfigError, ToolError, ToolNetworkError, ToolTimeout
from reasonloop.events import Citation
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["SearchResult", "WebSearchTool", "clean_text", "fetch_json", "format_results"]


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class _Backend:
    default_url: str
    needs_key: bool
    request: Callable[[str, str, int, str | None], dict[str, Any]]
    """(base_url, query, count, key) -> httpx request arguments."""
    parse: Callable[[Any], list[SearchResult]]


def _searxng_request(base: str, query: str, count: int, key: str | None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return {"method": "GET", "url": f"{base}/search", "params": {"q": query, "format": "json"}, "headers": headers}


def _brave_request(base: str, query: str, count: int, key: str | None) -> dict[str, Any]:
    return {
        "method": "GET",
        "url": f"{base}/res/v1/web/search",
        "params": {"q": query, "count": count},
        "headers": {"Accept": "application/json", "X-Subscription-Token": key or ""},
    }


def _tavily_request(base: str, query: str, count: int, key: str | None) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": f"{base}/search",
        "json": {"query": query, "max_results": count},
        "headers": {"Authorization": f"Bearer {key}"},
    }


def _serper_request(base: str, query: str, count: int, key: str | None) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": f"{base}/search",
        "json": {"q": query, "num": count},
        "headers": {"X-API-KEY": key},
    }


def _rows(data: Any, *path: str) -> list[dict[str, Any]]:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return [row for row in data if isinstance(row, dict)] if isinstance(data, list) else []


def _pick(rows: list[dict[str, Any]], url: str, snippet: str) -> list[SearchResult]:
    return [
        SearchResult(clean_text(r.get("title") or r.get(url)), str(r.get(url)), clean_text(r.get(snippet)))
        for r in rows
        if r.get(url)
    ]


_TAG = re.compile(r"<[^>]+>")


def clean_text(value: Any) -> str:
    """Text without HTML tags and entities (search APIs highlight matches with markup)."""
    return " ".join(html.unescape(_TAG.sub("", str(value or ""))).split())


BACKENDS: dict[str, _Backend] = {
    "searxng": _Backend("", False, _searxng_request, lambda d: _pick(_rows(d, "results"), "url", "content")),
    "brave": _Backend(
        "https://api.search.brave.com",
        True,
        _brave_request,
        lambda d: _pick(_rows(d, "web", "results"), "url", "description"),
    ),
    "tavily": _Backend(
        "https://api.tavily.com", True, _tavily_request, lambda d: _pick(_rows(d, "results"), "url", "content")
    ),
    "serper": _Backend(
        "https://google.serper.dev", True, _serper_request, lambda d: _pick(_rows(d, "organic"), "link", "snippet")
    ),
}


class WebSearchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Annotated[str, Field(min_length=1, description="What to search the web for.")]


class WebSearchTool(Tool):
    """Search the web through the configured backend.

    Args:
        settings: ``[tools.web_search]``.

    Raises:
        ConfigError: no or unknown backend, SearXNG without ``base_url``, or a backend that
            needs a key without ``api_key_env`` set.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "web_search")
    name = "web_search"
    description = "Search the web. Returns titles, URLs and snippets of the top results."
    Params = WebSearchParams

    def __init__(self, settings: WebSearchSettings) -> None:
        if settings.backend not in BACKENDS:
            raise ConfigError(f"tools.web_search.backend: unknown backend {settings.backend!r}", keys=["backend"])
        self.settings = settings
        self.backend = BACKENDS[settings.backend]
        self.base_url = (settings.base_url or self.backend.default_url).rstrip("/")
        if not self.base_url:
            raise ConfigError(f"tools.web_search.base_url is required for {settings.backend}", keys=["base_url"])
        if self.backend.needs_key and not settings.api_key_env:
            raise ConfigError(
                f"tools.web_search.api_key_env must name the variable holding the {settings.backend} key",
                keys=["api_key_env"],
            )
        self.timeout_s = settings.timeout_s + 1.0

    async def run(self, params: WebSearchParams, ctx: ToolContext) -> ToolOutput:
        key = secret(self.settings.api_key_env)
        if self.backend.needs_key and not key:
            raise ToolError(f"web_search: environment variable {self.settings.api_key_env} is not set")
        request = self.backend.request(self.base_url, params.query, self.settings.max_results, key)
        data = await fetch_json(request, self.settings.timeout_s, f"web_search ({self.settings.backend})")
        results = self.backend.parse(data)[: self.settings.max_results]
        out = format_results(params.query, results)
        answer = data.get("answer") if isinstance(data, dict) else None
        if isinstance(answer, str) and answer:
            out.text = f"Summary from the search engine: {answer}\n\n{out.text}"
        return out


async def fetch_json(request: dict[str, Any], timeout_s: float, what: str) -> Any:
    """Send one request to an operator-configured API and decode its JSON answer.

    Raises:
        ToolTimeout, ToolNetworkError: transport failures, non-2xx statuses, bodies that are not JSON.
    """
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.request(**request)
    except httpx.TimeoutException as exc:
        raise ToolTimeout(f"{what} did not answer within {timeout_s:g}s") from exc
    except httpx.HTTPError as exc:
        raise ToolNetworkError(f"{what} unreachable: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 400:
        raise ToolNetworkError(f"{what} answered HTTP {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError as exc:
        raise ToolNetworkError(f"{what} answered something that is not JSON: {response.text[:200]!r}") from exc


def format_results(query: str, results: list[SearchResult]) -> ToolOutput:
    """Numbered results as text, with one citation per result."""
    if not results:
        return ToolOutput(text=f"No results for {query!r}.", data=[])
    lines = []
    citations = []
    for i, r in enumerate(results, 1):
        lines.append(f"[{i}] {r.title}\n{r.url}\n{r.snippet}".rstrip())
        citations.append(Citation(marker=i, source=r.url, title=r.title or None, quote=r.snippet[:300]))
    return ToolOutput(
        text="\n\n".join(lines),
        citations=citations,
        data=[{"title": r.title, "url": r.url, "snippet": r.snippet} for r in results],
    )
