"""``wikipedia(query)``: search a MediaWiki wiki and read the intro of the best pages.

One call to the MediaWiki Action API (``base_url`` is the wiki's ``api.php``)::

    action=query&generator=search&gsrsearch=QUERY&gsrlimit=N
    &prop=extracts|info&exintro=1&explaintext=1&inprop=url&format=json&formatversion=2

answers ``query.pages[].{title, index, extract, fullurl}`` (``index`` is the search rank;
``extract`` needs the TextExtracts extension, as on Wikipedia). Works with any MediaWiki
(Wikipedia in any language, Wiktionary, a company wiki).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.config import WikipediaSettings
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput
from reasonloop.tools.web_search import SearchResult, clean_text, fetch_json, format_results

__all__ = ["WikipediaTool"]

EXTRACT_CHARS = 1500
"""Each page's intro is cut to this many characters (a few paragraphs)."""


class WikipediaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Annotated[str, Field(min_length=1, description="Topic or title to look up.")]


class WikipediaTool(Tool):
    """Look topics up on Wikipedia (or another MediaWiki).

    Args:
        settings: ``[tools.wikipedia]``.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "wikipedia")
    name = "wikipedia"
    description = "Look a topic up on Wikipedia. Returns the introduction of the best matching articles with links."
    Params = WikipediaParams

    def __init__(self, settings: WikipediaSettings | None = None) -> None:
        self.settings = settings or WikipediaSettings(enabled=True)
        self.timeout_s = self.settings.timeout_s + 1.0

    async def run(self, params: WikipediaParams, ctx: ToolContext) -> ToolOutput:
        request = {
            "method": "GET",
            "url": self.settings.base_url,
            "params": {
                "action": "query",
                "generator": "search",
                "gsrsearch": params.query,
                "gsrlimit": self.settings.max_results,
                "prop": "extracts|info",
                "exintro": 1,
                "explaintext": 1,
                "exlimit": "max",
                "inprop": "url",
                "format": "json",
                "formatversion": 2,
            },
            "headers": {"User-Agent": "reasonloop-wikipedia-tool"},
        }
        data = await fetch_json(request, self.settings.timeout_s, "wikipedia")
        return format_results(params.query, _results(data))


def _results(data: Any) -> list[SearchResult]:
    query = data.get("query") if isinstance(data, dict) else None
    pages = query.get("pages") if isinstance(query, dict) else None
    if isinstance(pages, dict):  # formatversion=1 answers a map keyed by page id
        pages = list(pages.values())
    if not isinstance(pages, list):
        return []
    rows = sorted((p for p in pages if isinstance(p, dict)), key=lambda p: p.get("index", 0))
    out = []
    for page in rows:
        title = clean_text(page.get("title"))
        extract = clean_text(page.get("extract"))
        if len(extract) > EXTRACT_CHARS:
            extract = extract[:EXTRACT_CHARS].rsplit(" ", 1)[0] + " …"
        out.append(SearchResult(title, str(page.get("fullurl") or ""), extract))
    return out
