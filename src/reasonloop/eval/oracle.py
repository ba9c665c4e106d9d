"""Ideal replies for the scripted model: every strategy run as a perfect model would run it.

:func:`ideal_model` returns a :class:`~reasonloop.llm.scripted.ScriptedProvider` whose reply
function reads each request, works out which question of the set it serves and what the
strategy asks for, and replies as an ideal model would: one search for the question (a native
tool call, a ReAct ``Action``, a one-step ReWOO plan, the question as its own sub-question), then
the gold answer citing the passage that holds it (or the question's evidence sentence, when the
set gives one) — or, when no passage it was shown holds it, or the question has no answer in
the documents, that the passages do not say. Comparing strategies with it isolates what each strategy
costs (calls, tokens, tool calls, time) from what a model gets wrong; the F1 it reaches is what
retrieval allows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from reasonloop.eval.datasets import QAItem
from reasonloop.eval.metrics import contains_answer
from reasonloop.eval.outcomes import is_yes_no
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider

__all__ = ["ideal_model"]

_BLOCK = re.compile(r"(?:^|(?<=: ))\[(\d+)\][^\n]*\n(.*?)(?=\n\[\d+\]|\Z)", re.M | re.S)


def _marker(messages: Sequence[Message], answers: Sequence[str]) -> str:
    """`` [n]`` for the numbered passage holding an answer, the last one shown first; '' when none does."""
    if not answers:
        return ""
    for message in reversed(messages):
        for number, body in _BLOCK.findall(message.content):
            if contains_answer(body, answers):
                return f" [{number}]"
    return ""


def ideal_model(items: Sequence[QAItem]) -> ScriptedProvider:
    """A scripted model replying ideally to any built-in strategy on ``items``."""
    by_length = sorted(items, key=lambda i: -len(i.question))

    def item_of(messages: Sequence[Message]) -> QAItem:
        text = " ".join(" ".join(m.content.split()) for m in messages if m.role in ("user", "tool"))
        for item in by_length:
            if " ".join(item.question.split()) in text:
                return item
        raise LookupError("no question of the set in the request")

    def reply(messages: list[Message], tools: list[Any] | None) -> Any:
        item = item_of(messages)
        system = messages[0].content if messages and messages[0].role == "system" else ""
        searched = any(m.role == "tool" or (m.role != "system" and "Observation:" in m.content) for m in messages)
        yes_no = is_yes_no(item.answers)
        marker = _marker(messages, [item.evidence] if item.evidence else item.answers)
        if not marker and yes_no and item.gold_ids and not item.evidence:
            # a comparison's yes/no is in no passage: it needs both gold documents shown
            shown = "\n".join(m.content for m in messages)
            marker = " [1]" if all(f"({g})" in shown for g in item.gold_ids) else ""
        # An ideal model answers from the evidence it was shown: without the answer there, it says so.
        answer = item.answers[0] + marker if marker and item.answers else "The passages do not say."
        if tools and not searched:  # native tool calling
            return {"tool_calls": [{"name": "docsearch", "arguments": {"query": item.question}}]}
        if "Action Input:" in system:  # ReAct text
            if not searched:
                query = json.dumps({"query": item.question}, ensure_ascii=False)
                return f"Thought: I need to search the documents.\nAction: docsearch\nAction Input: {query}"
            return f"Thought: The passages answer it.\nFinal Answer: {answer}"
        if "#E<n>" in system or "#E1 =" in system:  # ReWOO planner
            return f"Plan: Search the documents for the question.\n#E1 = docsearch[{item.question}]"
        planning = messages[-1].role == "user" and messages[-1].content.split() == item.question.split()
        if planning and ("sub-question" in system or "子问题" in system):  # decompose's split
            return f"1. {item.question}"
        return answer

    return ScriptedProvider(replies=reply)
