"""Plugins a test server loads by dotted path: a model that answers by question, slow tools, and
a strategy that cites one sentence as an answer does.

:class:`QuestionScript` reads ``[llm] model``, a JSON file of scenarios::

    {"lighthouse": {"replies": ["The keeper [1]."], "chunk_size": 4, "delay_s": 0.02}}

A scenario named ``research`` with ``"research": true`` plays every part of a research run
(:class:`tests.reasoning.research_helpers.ResearchModel`, its judge's replies in ``judge``) and
answers the requests no other scenario's keyword names.

A request is answered from the scenario whose keyword appears in the latest message that names
one (the question, or the prompt that quotes it); each scenario replays its replies in order
and then repeats its last. ``"fail": true`` streams the reply, then fails the call; ``"rate": N``
sends N deltas a second, kept to the clock.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadResponse
from reasonloop.events import Event
from reasonloop.llm.base import ChatRequest, LLMChunk
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.base import Reasoning
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext


class QuestionScript(ScriptedProvider):
    id: ClassVar[str] = "question_script"
    description: ClassVar[str] = "Answers from scenarios chosen by a keyword of the question (browser tests)"

    def __init__(self, settings: LLMSettings | None = None, **kwargs: Any) -> None:
        settings = settings or LLMSettings(provider="question_script")
        self.scenarios: dict[str, dict[str, Any]] = json.loads(Path(settings.model).read_text(encoding="utf-8"))
        self.served: dict[str, int] = {}
        self._failing = False
        self._rate = 0.0
        self._research: Any = None
        super().__init__(settings, replies=self._choose, **kwargs)

    def _scenario(self, request: ChatRequest) -> tuple[str, dict[str, Any]]:
        for message in reversed(request.messages):
            text = message.content if isinstance(message.content, str) else json.dumps(message.content)
            for keyword, scenario in self.scenarios.items():
                if keyword in (text or ""):
                    return keyword, scenario
        if "research" in self.scenarios:  # a research run's sub-agents ask questions no keyword names
            return "research", self.scenarios["research"]
        return "", {"replies": ["No scenario matches this question."]}

    def _choose(self, messages: Any, tools: Any) -> Any:
        raise AssertionError("replaced by _reply")

    def _reply(self, request: ChatRequest) -> Any:
        keyword, scenario = self._scenario(request)
        n = self.served.get(keyword, 0)
        self.served[keyword] = n + 1
        self.chunk_size = int(scenario.get("chunk_size", 8))
        self.delay_s = float(scenario.get("delay_s", 0.0))
        if scenario.get("research"):  # each part of a research run answered as it asks
            from tests.reasoning.research_helpers import PLAN, ResearchModel

            if self._research is None:
                self._research = ResearchModel(
                    plan=scenario.get("plan") or PLAN, judge=scenario.get("judge") or ({"decision": "answer"},)
                )
            return self._research.reply(list(request.messages), None)
        replies = scenario["replies"]
        self.chunk_size = int(scenario.get("chunk_size", 8))
        self.delay_s = float(scenario.get("delay_s", 0.0))
        self._failing = bool(scenario.get("fail"))
        self._rate = float(scenario.get("rate", 0.0))
        if self._rate:
            self.delay_s = 0.0  # paced below, against the clock: sleeps alone fall behind the rate
        return replies[min(n, len(replies) - 1)]

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        loop = asyncio.get_running_loop()
        start, sent = loop.time(), 0
        async for chunk in super()._stream(request):
            if self._failing and type(chunk).__name__ == "Done":
                raise LLMBadResponse("the model's connection broke off mid-answer")
            if self._rate and type(chunk).__name__ == "TextDelta":
                await asyncio.sleep(max(0.0, start + sent / self._rate - loop.time()))
                sent += 1
            yield chunk


class LookupParams(BaseModel):
    input: str


class SlowLookup(Tool):
    """Looks a word up slowly, so that a plan's independent steps are seen running at once."""

    info: ClassVar[PluginInfo] = PluginInfo(id="slow_lookup", name="Slow lookup", description="A slow dictionary")
    name = "slow_lookup"
    description = "Look a word up in a slow dictionary."
    Params = LookupParams

    async def run(self, params: LookupParams, ctx: ToolContext) -> str:
        await asyncio.sleep(1.2)
        return f"{params.input}: found in the slow dictionary"


class StuckLookup(SlowLookup):
    """A lookup that never answers within its time limit."""

    info: ClassVar[PluginInfo] = PluginInfo(id="stuck_lookup", name="Stuck lookup", description="Never answers")
    name = "stuck_lookup"
    description = "Look a word up in a dictionary that hangs."
    timeout_s = 0.3

    async def run(self, params: LookupParams, ctx: ToolContext) -> str:
        await asyncio.sleep(30)
        return "never"


SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


class QuoteSentence(Reasoning):
    """Answers with the sentence of the best passage that holds the question's last word, cited as
    an answer cites it: the quote's offsets in its page's text, inside its passage's. No model call,
    so the citation does not depend on how the built-in strategies pick their sentences."""

    info: ClassVar[PluginInfo] = PluginInfo(
        id="quote_sentence", name="Quote a sentence", description="Cites one sentence of a passage (browser tests)"
    )

    async def stream(self, question: str) -> AsyncIterator[Event]:
        word = question.split()[-1]
        hits = [h for r in self.ctx.retrievers for h in await r.search(word, top_k=5) if word in h.text]
        if not hits:
            yield self.answer(f"Nothing holds {word!r}.")
            return
        hit = hits[0]
        at = hit.text.index(word)
        begin = max((m.end() for m in SENTENCE_END.finditer(hit.text, 0, at)), default=0)
        end = next((m.start() for m in SENTENCE_END.finditer(hit.text, at)), len(hit.text))
        sentence = hit.text[begin:end]
        chunk = hit.metadata["start"]
        citation = hit.citation(1).model_copy(
            update={
                "quote": sentence,
                "start": chunk + begin,
                "end": chunk + end,
                "chunk_start": chunk,
                "chunk_end": hit.metadata["end"],
            }
        )
        yield self.answer(f"{sentence} [1]", [citation])
