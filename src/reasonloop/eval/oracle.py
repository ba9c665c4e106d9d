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

Given the hops of multi-hop questions (:mod:`reasonloop.eval.hops`), it works hop by hop as a
capable model does, and knows no more than one: ReAct and native tool calls search the question
first; when the answer is not in what came back, they search for the next hop, but a search
that needs an earlier hop's answer (the bridge entity) is written only once that answer is in a
passage the model was shown; a model that never saw it stops and says the passages do not say.
Decomposition splits the question into the hops' sub-questions (``#1`` for the first one's
answer) and answers each from its own evidence; a ReWOO plan has one step per hop, ``#E1``
standing for the first step's result. IRCoT's chain states one hop per sentence: the sentence of a
shown passage that holds the hop's answer (the bridge entity, which the strategy then searches), or,
when no shown passage holds it, the hop's search as a sentence; it concludes ``So the answer is:``
once the answer is in a passage it was shown. A research run plans the question itself as its only
research question, its sub-agent works as ReAct does, its judge answers once the findings hold the
answer, and its report is the answer. It never answers from a gold answer it was not shown.
Asked for a route by the ``auto`` mode's router, it names the route the question's hops call for:
``multi_hop`` for two hops or more (or two gold documents when the hops are unknown), else ``single``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from reasonloop.eval.datasets import QAItem
from reasonloop.eval.hops import Hop
from reasonloop.eval.metrics import contains_answer
from reasonloop.eval.outcomes import is_yes_no
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import ScriptedProvider

__all__ = ["ideal_model"]

_REF = re.compile(r"#(\d+)(?!\d)")
_MARKERS = re.compile(r"\s*\[\d+\]")
DONT_KNOW = "The passages do not say."
_ROUTE_ASKED = '"route": "<none | single | multi_hop | research>"'
"""What the router's prompt (en and zh) asks for."""

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


def _issued(messages: Sequence[Message]) -> list[str]:
    """The search queries the model wrote so far (ReAct ``Action Input`` or native tool calls)."""
    queries = []
    for m in messages:
        if m.role != "assistant":
            continue
        queries += [str(part.arguments.get("query", "")) for part in m.tool_calls]
        for raw in re.findall(r"Action Input: (.*)", m.content):
            try:
                queries.append(str(json.loads(raw).get("query", "")))
            except (ValueError, AttributeError):
                continue
    return [" ".join(q.split()).lower() for q in queries]


def _fill(query: str, hops: Sequence[Hop]) -> str:
    """``query`` with each ``#k`` replaced by the answer of hop ``k``."""
    return _REF.sub(lambda m: hops[int(m.group(1)) - 1].answer, query)


def _next_query(hops: Sequence[Hop], shown: str, issued: Sequence[str]) -> str | None:
    """The search a capable model writes next, knowing only what it was shown: the first hop
    not yet done, when every earlier answer it needs is in ``shown``; None when there is none."""
    for hop in hops:
        needs = [hops[int(n) - 1].answer for n in _REF.findall(hop.query)]
        if any(not a or not contains_answer(shown, [a]) for a in needs):
            return None  # a bridge the model has not seen: it cannot write the search
        query = _fill(hop.query, hops)
        done = contains_answer(shown, [hop.answer]) if hop.answer else " ".join(query.split()).lower() in issued
        if done:
            continue
        return None if " ".join(query.split()).lower() in issued else query
    return None


_IRCOT_SECTIONS = re.compile(
    r"(?:Reasoning so far:|已有推理：)\n(?P<reasoning>.*?)\n\n(?:Passages:|段落：)\n(?P<passages>.*?)"
    r"\n\n(?:Reply with the next sentence only\.|只回复下一句话。)\s*\Z",
    re.S,
)
_NO_REASONING = ("(none yet)", "（暂无）")
_CITED = re.compile(r"\[\d+\]\.?$")
_HEADER = re.compile(r"(?:^|\n\n)\[(\d+)\] [^\n]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"\w{3,}")


def _ircot_view(text: str) -> tuple[list[str], list[tuple[int, str]]] | None:
    """The sentences written so far and the numbered passages of an IRCoT step's request (None when
    the request is not one)."""
    m = _IRCOT_SECTIONS.search(text)
    if m is None:
        return None
    written = [line for line in m.group("reasoning").splitlines() if line.strip() not in ("", *_NO_REASONING)]
    blocks = m.group("passages")
    heads = list(_HEADER.finditer(blocks))
    passages = [
        (int(h.group(1)), blocks[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(blocks)])
        for i, h in enumerate(heads)
    ]
    return written, passages


def _fact(passages: Sequence[tuple[int, str]], fact: str, about: str) -> str | None:
    """The sentence of a shown passage that holds ``fact`` and shares the most words with ``about``
    (the hop's search: "Hans Edler was from Sweden", not any sentence naming Sweden), cited; None
    when no shown sentence holds it."""
    words = set(_WORD.findall(about.lower()))
    found = [
        (len(words & set(_WORD.findall(sentence.lower()))), -rank, -k, number, sentence.strip())
        for rank, (number, body) in enumerate(passages)
        for k, sentence in enumerate(_SENTENCE_END.split(body.strip()))
        if contains_answer(sentence, [fact])
    ]
    if not found:
        return None
    *_, number, sentence = max(found)
    return f"{sentence.rstrip('.')} [{number}]."


def _ircot_sentence(question: str, chain: Sequence[Hop], answer: str, text: str) -> str:
    """The next sentence of an ideal IRCoT chain: the answer once a shown passage holds it; else the
    next hop's fact from a shown passage; else the next hop's search; ``So the answer is:`` that the
    passages do not say when the model cannot write the next step."""
    view = _ircot_view(text)
    if answer != DONT_KNOW or not chain or view is None:
        return f"So the answer is: {answer}"
    written, passages = view
    said = " ".join(w for w in written if _CITED.search(w))  # the facts stated, not the searches asked
    shown = said + "\n" + "\n".join(body for _, body in passages)
    searched = {" ".join(q.split()).lower() for q in (question, *written)}
    for k, hop in enumerate(chain):
        needs = [chain[int(n) - 1].answer for n in _REF.findall(hop.query)]
        if any(not a or not contains_answer(shown, [a]) for a in needs):
            break  # a bridge the model has not seen: it cannot write the step
        if k < len(chain) - 1:  # the last hop's fact is the answer, which no shown passage holds
            fact = hop.answer or _fill(hop.query, chain)  # a lookup hop states what it looked up
            if contains_answer(said, [fact]):
                continue
            sentence = _fact(passages, fact, _fill(hop.query, chain))
            if sentence is not None:
                return sentence
        search = _fill(_subquestion(hop), chain)
        if " ".join(search.split()).lower() in searched:
            break  # searched already, and still not found
        return search
    return f"So the answer is: {DONT_KNOW}"


def _subquestion(hop: Hop) -> str:
    """A hop's search as a sub-question (a bare entity or reference becomes a question about it)."""
    return (
        hop.query
        if hop.query.rstrip().endswith("?") or ">>" in hop.query
        else f"What do the documents say about {hop.query}?"
    )


def _research_reply(system: str, item: QAItem, answer: str, messages: Sequence[Message]) -> str | None:
    """A research run's planner, judge or report writer, answered ideally; None for other requests.

    The plan is the question itself (its sub-agent then works hop by hop as ReAct does); the judge
    answers when the findings it was shown hold the gold answer and otherwise says the documents
    cannot answer; the report is the answer alone, one section citing its passage."""
    if '"questions"' in system:
        return json.dumps({"questions": [item.question]}, ensure_ascii=False)
    if '"decision"' in system:
        shown = messages[-1].content if messages else ""
        if item.answers and contains_answer(shown, item.answers):
            return json.dumps({"decision": "answer", "reason": "the findings give the answer"})
        return json.dumps({"decision": "unanswerable", "reason": "the passages do not say"})
    if "## Not established" in system or "## 未能确定" in system:
        findings = (messages[-1].content if messages else "").partition("\nPassages:")[0]
        cited = re.findall(r"\[(\d+)\]", findings)
        if answer == DONT_KNOW and cited and item.answers and contains_answer(findings, item.answers):
            # a comparison's yes or no is in no passage: the report restates what the findings decided
            return f"{item.answers[0]} [{cited[0]}]"
        return answer
    return None


def ideal_model(items: Sequence[QAItem], hops: Mapping[str, Sequence[Hop]] | None = None) -> ScriptedProvider:
    """A scripted model replying ideally to any built-in strategy on ``items`` (hop by hop for the
    questions ``hops`` gives the hops of)."""
    by_length = sorted(items, key=lambda i: -len(i.question))
    hops = hops or {}
    # A decomposition's sub-question, read back to its question and hop: (pattern, item, hop index).
    parts: list[tuple[re.Pattern[str], QAItem, int]] = []
    for item in items:
        for k, hop in enumerate(hops.get(item.id, ())):
            template = _subquestion(hop)
            if template.split() == item.question.split():
                continue
            pattern = re.escape(" ".join(template.split())).replace(r"\ ", " ")
            pattern = re.sub(r"\\?#(\d+)", r"(?P<r\1>.+?)", pattern)
            parts.append((re.compile(pattern, re.I), item, k))

    def item_of(messages: Sequence[Message]) -> QAItem:
        text = " ".join(" ".join(m.content.split()) for m in messages if m.role in ("user", "tool"))
        for item in by_length:
            if " ".join(item.question.split()) in text:
                return item
        raise LookupError("no question of the set in the request")

    def part_of(messages: Sequence[Message]) -> tuple[QAItem, int] | bool | None:
        """The question and hop of a decomposition's sub-question being answered; False when it has
        the form of one but an earlier answer put in it is none the set knows (the earlier hop was
        not found: the model cannot tell what it is asked about); None when it is no sub-question."""
        asked = re.findall(r"Question: (.*)", messages[-1].content) if messages else []
        if not asked:
            return None
        line = " ".join(asked[-1].split())
        seen = False
        for pattern, item, k in parts:
            m = pattern.fullmatch(line)
            if m is None:
                continue
            seen = True
            chain = hops[item.id]
            if all(
                " ".join(_MARKERS.sub("", v).split()).lower() == chain[int(n[1:]) - 1].answer.lower()
                for n, v in m.groupdict().items()
            ):
                return item, k
        return False if seen else None

    def final(item: QAItem, messages: Sequence[Message]) -> str:
        yes_no = is_yes_no(item.answers)
        marker = _marker(messages, [item.evidence] if item.evidence else item.answers)
        if not marker and yes_no and item.gold_ids and not item.evidence:
            # a comparison's yes/no is in no passage: it needs both gold documents shown
            shown = "\n".join(m.content for m in messages)
            marker = " [1]" if all(f"({g})" in shown for g in item.gold_ids) else ""
        # An ideal model answers from the evidence it was shown: without the answer there, it says so.
        return item.answers[0] + marker if marker and item.answers else DONT_KNOW

    def reply(messages: list[Message], tools: list[Any] | None) -> Any:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        try:
            item = item_of(messages)
        except LookupError:
            found = part_of(messages)
            if found is None:
                raise
            if found is False:
                return DONT_KNOW
            item, k = found
            chain = hops[item.id]
            if k == len(chain) - 1:
                return final(item, messages)
            found_text = chain[k].answer or chain[k].query  # a lookup hop finds what it looked up
            marker = _marker(messages, [found_text])
            return found_text + marker if marker else DONT_KNOW
        chain = hops.get(item.id, ())
        if _ROUTE_ASKED in messages[-1].content:  # the auto mode's router
            many = len(chain) >= 2 or (not chain and len(item.gold_ids) >= 2)
            route = "multi_hop" if many else "single"
            return json.dumps({"route": route, "reason": f"{len(chain) or len(item.gold_ids)} hops"})
        searched = any(m.role == "tool" or (m.role != "system" and "Observation:" in m.content) for m in messages)
        answer = final(item, messages)
        shown = "\n".join(m.content for m in messages if m.role != "system")
        query: str | None = item.question
        if searched:  # a second hop only when the answer is not there yet and the next search can be written
            query = None if answer != DONT_KNOW or not chain else _next_query(chain, shown, _issued(messages))
        research = _research_reply(system, item, answer, messages)
        if research is not None:
            return research
        if tools and "Action Input:" not in system:  # native tool calling
            if query is not None:
                return {"tool_calls": [{"name": "docsearch", "arguments": {"query": query}}]}
            return answer
        if "Action Input:" in system:  # ReAct text
            if query is not None:
                text = json.dumps({"query": query}, ensure_ascii=False)
                return f"Thought: I need to search the documents.\nAction: docsearch\nAction Input: {text}"
            return f"Thought: The passages answer it, or nothing more can be searched.\nFinal Answer: {answer}"
        if "So the answer is:" in system or "所以答案是" in system:  # IRCoT's next sentence
            return _ircot_sentence(item.question, chain, answer, messages[-1].content)
        if "#E<n>" in system or "#E1 =" in system:  # ReWOO planner
            if not chain:
                return f"Plan: Search the documents for the question.\n#E1 = docsearch[{item.question}]"
            steps = [_REF.sub(r"#E\1", hop.query) for hop in chain]
            return "\n".join(f"Plan: Find hop {k}.\n#E{k} = docsearch[{q}]" for k, q in enumerate(steps, 1))
        planning = messages[-1].role == "user" and messages[-1].content.split() == item.question.split()
        if planning and ("sub-question" in system or "子问题" in system):  # decompose's split
            if not chain:
                return f"1. {item.question}"
            return "\n".join(f"{k}. {_subquestion(hop)}" for k, hop in enumerate(chain, 1))
        return answer

    return ScriptedProvider(replies=reply)
