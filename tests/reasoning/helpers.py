"""Fakes for strategy tests: an in-memory retriever and tools that record what they saw."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from reasonloop.agents import Agent
from reasonloop.events import Event
from reasonloop.kb.base import Filter, Hit
from reasonloop.tools.base import tool

CORPUS = [
    Hit(
        chunk_id="c1",
        document_id="d1",
        source="france.md",
        title="France",
        text="Paris is the capital of France.",
        metadata={"page": 1},
    ),
    Hit(
        chunk_id="c2",
        document_id="d2",
        source="germany.md",
        title="Germany",
        text="Berlin is the capital of Germany.",
        metadata={"page": 3},
    ),
    Hit(
        chunk_id="c3",
        document_id="d3",
        source="eiffel.md",
        title="Eiffel Tower",
        text="The Eiffel Tower in Paris is 330 metres tall.",
        metadata={},
    ),
]


class FakeRetriever:
    """Keyword match over a few hits; records queries; may sleep to expose concurrency."""

    def __init__(self, hits: Sequence[Hit] = CORPUS, delay_s: float = 0.0) -> None:
        self.hits = list(hits)
        self.queries: list[str] = []
        self.delay_s = delay_s
        self.active = 0
        self.max_active = 0

    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]:
        self.queries.append(query)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            words = {w.strip("?.,").lower() for w in query.split() if len(w) > 3}
            found = [h for h in self.hits if words & {w.strip(".,").lower() for w in h.text.split()}]
            return found[:top_k]
        finally:
            self.active -= 1


class Gauge:
    """Counts how many calls run at once."""

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.calls: list[str] = []

    async def hold(self, label: str, seconds: float) -> None:
        self.calls.append(label)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.active -= 1


def make_tools(gauge: Gauge | None = None):
    """``lookup`` (echo), ``boom`` (raises), ``slow`` (sleeps under the gauge)."""
    gauge = gauge or Gauge()

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    @tool
    async def boom(key: str) -> str:
        """Always fails."""
        raise RuntimeError(f"cannot handle {key}")

    @tool
    async def slow(key: str, seconds: float = 0.05) -> str:
        """Sleeps a little."""
        await gauge.hold(key, seconds)
        return f"slow {key}"

    return [lookup, boom, slow]


async def collect_events(agent: Agent, question: str, **kwargs) -> list[Event]:
    return [event async for event in agent.stream(question, **kwargs)]


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]
