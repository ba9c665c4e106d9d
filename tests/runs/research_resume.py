"""A served research agent whose model and search tool write what they do to files, for the research
resume tests in this process and in others (tests/runs/test_research_resume.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from reasonloop.agents import AgentRunner
from reasonloop.config import AgentSettings, KBSettings, RunsSettings, Settings
from reasonloop.registry import Registry
from reasonloop.runs.models import RunRequest
from reasonloop.tools.base import ToolContext, ToolOutput, tool
from reasonloop.tools.evidence import format_evidence
from tests.reasoning.research_helpers import DOCS, QUESTION, ResearchModel, role, words

SLOW_WORD = "inhabitants"
"""The third research question's search holds this word: it waits at the gate."""


class Searches:
    """The ``search`` tool over the three documents, each search logged (every process appends);
    a search for :data:`SLOW_WORD` waits for ``release`` when ``gated``."""

    def __init__(self, log: Path, gated: bool = False) -> None:
        self.log = log
        self.gated = gated
        self.release = asyncio.Event()
        self.blocked = asyncio.Event()

        @tool
        async def search(query: str, ctx: ToolContext) -> ToolOutput:
            """Search the documents."""
            with self.log.open("a") as f:
                f.write(json.dumps(query) + "\n")
            if self.gated and SLOW_WORD in query.lower():
                self.blocked.set()
                await self.release.wait()
            asked = words(query)
            hits = [h for h in DOCS if asked & words(h.text)]
            hits.sort(key=lambda h: -len(asked & words(h.text)))
            text, citations = format_evidence(hits[:2], ctx.scope.evidence_log(), 500)
            return ToolOutput(text=text or "nothing found", citations=citations)

        self.tool = search

    def logged(self) -> list[str]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


class CountingResearchModel(ResearchModel):
    """The research model, each request it serves written to ``log`` as its part (and, for a
    sub-agent, its question)."""

    def __init__(self, log: Path) -> None:
        super().__init__(chunk_size=12)
        self.log = log

    async def _stream(self, request):  # type: ignore[override]
        messages = list(request.messages)
        part = role(messages)
        if part == "agent":
            part += ":" + messages[1].content.removeprefix("Question: ").strip()
        with self.log.open("a") as f:
            f.write(json.dumps(part) + "\n")
        async for chunk in super()._stream(request):
            yield chunk


def logged(path: Path) -> list[str]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def research_runner(tmp: Path, runs: RunsSettings, searches: Searches, model: ResearchModel) -> AgentRunner:
    """The served runner, its agent ``researcher`` a research agent with the ``search`` tool."""
    registry = Registry(use_entry_points=False)
    registry.register("tool", "search", searches.tool)
    settings = Settings(runs=runs, kb=KBSettings(path=str(tmp / "kb")))
    settings.agents = {
        "researcher": AgentSettings(reasoning="research", tools=["search"], kb=False, settings={"max_concurrency": 3})
    }
    return AgentRunner(settings, registry=registry, llm=model)


def request() -> RunRequest:
    return RunRequest(question=QUESTION, agent="researcher")
