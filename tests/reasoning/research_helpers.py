"""A three-document corpus and a scripted model that plays a research run's planner, sub-agents
(ReAct text), judge and report writer, each reply read from the request it answers."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from reasonloop.kb.base import Filter, Hit
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider

QUESTION = "Where was the maker of the Aria 2 founded, and how many people live in that city?"
PLAN = [
    "Who makes the Aria 2 headphones?",
    "Where was Northwind Audio founded?",
    "How many inhabitants does Oslo have?",
]

DOCS = [
    Hit(
        chunk_id="c1",
        document_id="d1",
        source="aria.md",
        title="Aria 2",
        text="The Aria 2 is a pair of wireless headphones. The Aria 2 headphones are made by Northwind Audio.",
    ),
    Hit(
        chunk_id="c2",
        document_id="d2",
        source="northwind.md",
        title="Northwind Audio",
        text="Northwind Audio designs speakers. Northwind Audio was founded in Oslo in 1998.",
    ),
    Hit(
        chunk_id="c3",
        document_id="d3",
        source="oslo.md",
        title="Oslo",
        text="Oslo is the capital of Norway. Oslo has about 700000 inhabitants.",
    ),
]

_STOP = {"what", "where", "which", "does", "many", "have", "that", "with", "from", "about", "made"}


def words(text: str) -> set[str]:
    return {w.strip("?.,!:;[]").lower() for w in text.split() if len(w.strip("?.,!:;[]")) > 3} - _STOP


class Corpus:
    """Keyword search over the documents; a query holding ``slow_word`` waits ``slow_s`` first."""

    def __init__(self, hits: Sequence[Hit] = DOCS, slow_word: str = "", slow_s: float = 0.0, delay_s: float = 0.0):
        self.hits = list(hits)
        self.slow_word, self.slow_s, self.delay_s = slow_word.lower(), slow_s, delay_s
        self.queries: list[str] = []
        self.active = 0
        self.max_active = 0

    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]:
        self.queries.append(query)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.slow_word and self.slow_word in query.lower():
                await asyncio.sleep(self.slow_s)
            elif self.delay_s:
                await asyncio.sleep(self.delay_s)
            asked = words(query)
            scored = sorted(
                ((len(asked & words(h.text)), i, h) for i, h in enumerate(self.hits)), key=lambda t: (-t[0], t[1])
            )
            return [h for score, _, h in scored if score][:top_k]
        finally:
            self.active -= 1


_BLOCK = re.compile(r"\[(\d+)\][^\n]*\n([^\n]+)")

Judge = Callable[[int, str], Any]
"""The judge's reply for its nth call (1, 2, ...) given the findings it was shown."""


def role(messages: list[Message]) -> str:
    system = messages[0].content if messages and messages[0].role == "system" else ""
    if '"questions"' in system:
        return "plan"
    if '"decision"' in system:
        return "judge"
    if "## Not established" in system or "未能确定" in system:
        return "report"
    if "Action Input" in system:
        return "agent"
    return "other"


class ResearchModel(ScriptedProvider):
    """Replies as each part of a research run asks; counts the calls of each part."""

    def __init__(
        self,
        plan: Sequence[str] | str = PLAN,
        judge: Judge | Sequence[Any] = ({"decision": "answer", "reason": "all found"},),
        **kwargs: Any,
    ) -> None:
        super().__init__(replies=self.reply, **kwargs)
        self.plan = plan
        self.judge = judge
        self.parts: dict[str, int] = {}
        self.judge_prompts: list[str] = []
        self.report_prompts: list[str] = []

    def reply(self, messages: list[Message], tools: Any) -> Any:
        part = role(messages)
        self.parts[part] = self.parts.get(part, 0) + 1
        if part == "plan":
            return self.plan if isinstance(self.plan, str) else json.dumps({"questions": list(self.plan)})
        if part == "judge":
            self.judge_prompts.append(messages[-1].content)
            n = self.parts[part]
            if callable(self.judge):
                out = self.judge(n, messages[-1].content)
            else:
                out = self.judge[min(n, len(self.judge)) - 1]
            return out if isinstance(out, str) else json.dumps(out)
        if part == "report":
            self.report_prompts.append(messages[-1].content)
            asked = messages[-1].content
            zh = "发现：" in asked
            findings = asked.split("发现：" if zh else "Findings:", 1)[1].split("段落：" if zh else "Passages:", 1)[0]
            facts = [line for line in findings.splitlines() if re.search(r"\[\d+\]", line)]
            if zh:
                return "## 发现\n" + "\n".join(facts) + "\n\n## 未能确定\n- 无"
            return "## Findings\n" + "\n".join(facts) + "\n\n## Not established\n- none"
        if part == "agent":
            return agent_reply(messages)
        return "I cannot tell."


def agent_reply(messages: list[Message]) -> str:
    """A ReAct sub-agent: search its question once, then answer with the sentence of the passage that
    shares most of its words, citing that passage."""
    question = messages[1].content.removeprefix("Question: ").strip()
    named = re.search(r"Action: one tool name from \[([^\],]+)", messages[0].content)
    tool = named.group(1).strip() if named else "docsearch"
    observations = [m.content for m in messages if m.content.startswith("Observation:")]
    if not observations:
        query = json.dumps({"query": question})
        return f"Thought: I need to search.\nAction: {tool}\nAction Input: {query}"
    blocks = _BLOCK.findall(observations[-1])
    if not blocks:
        said = observations[-1].removeprefix("Observation:").strip()
        if re.search(r"\[\d+\]", said):  # an agent it called answered, citing the run's passages
            return f"Thought: the answer came back.\nFinal Answer: {said}"
        return "Thought: nothing found.\nFinal Answer: The documents do not say."
    asked = words(question)
    best_n, best_text = max(blocks, key=lambda b: len(asked & words(b[1])))
    sentences = [s.strip() for s in re.split(r"(?<=[.])\s+", best_text) if s.strip()]
    sentence = max(reversed(sentences), key=lambda s: len(asked & words(s)))
    return f"Thought: found it.\nFinal Answer: {sentence.rstrip('.')} [{best_n}]."
