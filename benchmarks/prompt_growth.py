"""Prompt tokens per strategy as a multi-hop trajectory grows: ReAct, tool calling, ReWOO.

ReAct and tool calling send the whole transcript back to the model every round, so each
observation is paid for again in every later round; ReWOO's planner writes all steps at
once and only the solver sees the evidence, once. This script measures that difference on
the same trajectories: for each HotpotQA question and each number of hops ``h`` (1-8), a
scripted model makes ``h`` ``docsearch`` calls (the same queries for every strategy), then
answers. The knowledge source is a small in-memory retriever over the HotpotQA dev
paragraphs (real passage sizes, about 110 tokens each; ``docsearch`` returns 5 by default).

Reported per cell: prompt tokens of the whole run, averaged over the questions, as the run
itself reports them (``RunResult.usage.prompt_tokens``; the scripted model reports no usage,
so the LLM layer estimates it from the messages sent with ``reasonloop.tokens``). Every run
is checked to have made ``h`` tool calls and answered.

Usage::

    python benchmarks/prompt_growth.py                 # 20 questions, hops 1-8
    python benchmarks/prompt_growth.py --quick         # 5 questions
    python benchmarks/prompt_growth.py --top-k 3 --json growth.json

The data is read from ``../shared/data/hotpotqa_dev_ircot500`` (relative to the repository
root) or ``--data``; it is never copied.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonloop.agents import Agent
from reasonloop.kb.base import Filter, Hit
from reasonloop.llm.base import Message
from reasonloop.llm.scripted import Reply, ScriptedProvider
from reasonloop.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "hotpotqa_dev_ircot500" / "dev_subsampled.jsonl"
STRATEGIES = ("react", "toolcall", "rewoo")
MAX_HOPS = 8
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    (
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "and",
        "or",
        "to",
        "for",
        "is",
        "was",
        "by",
        "with",
        "as",
        "at",
        "from",
        "that",
    )
)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    titles: tuple[str, ...]
    """Paragraph titles, supporting ones first: the queries of the trajectory, in order."""


class ParagraphRetriever:
    """Word-overlap search over HotpotQA paragraphs (a title match counts three times).

    Deterministic and fast (an inverted index); good enough to return the titled
    paragraph first and related ones after it, which is all the benchmark needs.
    """

    def __init__(self, hits: Sequence[Hit]) -> None:
        self.hits = list(hits)
        self._index: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for n, hit in enumerate(self.hits):
            title = words(hit.title)
            for word in title | words(hit.text):
                self._index[word].append((n, 3 if word in title else 1))

    async def search(self, query: str, top_k: int = 10, filters: Sequence[Filter] | None = None) -> list[Hit]:
        scores: dict[int, int] = defaultdict(int)
        for word in words(query):
            for n, weight in self._index.get(word, ()):
                scores[n] += weight
        best = sorted(scores, key=lambda n: (-scores[n], n))[:top_k]
        return [self.hits[n].model_copy(update={"score": float(scores[n])}) for n in best]


def load(path: Path, limit: int) -> tuple[list[Question], ParagraphRetriever]:
    """The first ``limit`` questions with at least 8 paragraphs, and a retriever over every paragraph."""
    questions: list[Question] = []
    hits: dict[tuple[str, str], Hit] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            item = json.loads(line)
            contexts = item["contexts"]
            for c in contexts:
                key = (c["title"], c["paragraph_text"])
                if key not in hits:
                    hits[key] = Hit(
                        chunk_id=f"p{len(hits)}",
                        document_id=c["title"],
                        source=f"{c['title']}.txt",
                        title=c["title"],
                        text=c["paragraph_text"],
                    )
            if len(questions) < limit and len({c["title"] for c in contexts}) >= MAX_HOPS:
                ordered = sorted(contexts, key=lambda c: not c["is_supporting"])
                titles = tuple(dict.fromkeys(c["title"] for c in ordered))
                questions.append(Question(item["question_text"], item["answers_objects"][0]["spans"][0], titles))
    return questions, ParagraphRetriever(list(hits.values()))


# -- the scripted trajectories: same queries, each strategy's own format ----------------------------
def _args(title: str, top_k: int | None) -> dict[str, Any]:
    return {"query": title} if top_k is None else {"query": title, "top_k": top_k}


def react_script(q: Question, hops: int, top_k: int | None = None) -> list[Reply]:
    turns: list[Reply] = [
        f"Thought: I need to look up {title} to answer this.\n"
        f"Action: docsearch\nAction Input: {json.dumps(_args(title, top_k))}"
        for title in q.titles[:hops]
    ]
    turns.append(f"Thought: I now know the final answer.\nFinal Answer: {q.answer} [1]")
    return turns


def toolcall_script(q: Question, hops: int, top_k: int | None = None) -> list[Reply]:
    turns: list[Reply] = [
        {"tool_calls": [{"name": "docsearch", "arguments": _args(title, top_k)}]} for title in q.titles[:hops]
    ]
    turns.append(f"{q.answer} [1]")
    return turns


def rewoo_script(q: Question, hops: int, top_k: int | None = None) -> list[Reply]:
    plan = "\n".join(
        f"Plan: Look up {title} to answer this.\n"
        f"#E{n} = docsearch[{title if top_k is None else json.dumps(_args(title, top_k))}]"
        for n, title in enumerate(q.titles[:hops], 1)
    )
    return [plan, f"{q.answer} [1]"]


SCRIPTS = {"react": react_script, "toolcall": toolcall_script, "rewoo": rewoo_script}


def recount(llm: ScriptedProvider) -> int:
    """Prompt tokens of the recorded requests, also counting tool schemas and call arguments."""
    total = 0
    for messages, tools in zip(llm.prompts, llm.tools_seen, strict=True):
        total += sum(_message_tokens(m) for m in messages)
        total += sum(count_tokens(json.dumps(t.model_dump(), ensure_ascii=False)) for t in tools or ())
    return total


def _message_tokens(message: Message) -> int:
    calls = sum(count_tokens(c.name) + count_tokens(json.dumps(c.arguments)) for c in message.tool_calls or ())
    return count_tokens(message.content) + 4 + calls


async def one_run(
    strategy: str, q: Question, hops: int, retriever: ParagraphRetriever, top_k: int | None
) -> dict[str, Any]:
    llm = ScriptedProvider(replies=SCRIPTS[strategy](q, hops, top_k))
    settings: dict[str, Any] = {"max_rounds": MAX_HOPS + 2, "max_tool_calls": MAX_HOPS + 2}
    if strategy == "rewoo":
        settings["replan"] = False
    result = await Agent(strategy, llm=llm, kb=retriever, settings=settings).run(q.text)
    if result.error or result.usage.tool_calls != hops or result.stop_reason != "final":
        raise RuntimeError(
            f"{strategy}, {hops} hops, {q.text!r}: {result.usage.tool_calls} tool calls,"
            f" stop_reason {result.stop_reason}, error {result.error}"
        )
    return {
        "prompt_tokens": result.usage.prompt_tokens,
        "recounted": recount(llm),
        "llm_calls": result.usage.llm_calls,
    }


async def measure(
    questions: Sequence[Question], retriever: ParagraphRetriever, top_k: int | None = None
) -> list[dict[str, Any]]:
    """Rows per hop count: mean prompt tokens per strategy (``top_k=None``: docsearch's default)."""
    rows = []
    for hops in range(1, MAX_HOPS + 1):
        row: dict[str, Any] = {"hops": hops}
        for strategy in STRATEGIES:
            runs = [await one_run(strategy, q, hops, retriever, top_k) for q in questions]
            row[strategy] = statistics.mean(r["prompt_tokens"] for r in runs)
            row[f"{strategy}_recounted"] = statistics.mean(r["recounted"] for r in runs)
            row[f"{strategy}_llm_calls"] = runs[0]["llm_calls"]
        row["react/rewoo"] = row["react"] / row["rewoo"]
        row["toolcall/rewoo"] = row["toolcall"] / row["rewoo"]
        rows.append(row)
    return rows


def table(rows: Sequence[dict[str, Any]], suffix: str = "") -> str:
    head = f"{'hops':>4} {'react':>8} {'toolcall':>9} {'rewoo':>8} {'react/rewoo':>12} {'toolcall/rewoo':>15}"
    lines = [head, "-" * len(head)]
    for r in rows:
        react, toolcall, rewoo = (r[s + suffix] for s in STRATEGIES)
        lines.append(
            f"{r['hops']:>4} {react:>8.0f} {toolcall:>9.0f} {rewoo:>8.0f} {react / rewoo:>11.2f}x"
            f" {toolcall / rewoo:>14.2f}x"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 questions instead of 20")
    parser.add_argument("--questions", type=int, help="how many questions to average over")
    parser.add_argument("--top-k", type=int, default=5, help="passages per docsearch call (default 5)")
    parser.add_argument("--data", type=Path, default=DATA, help="HotpotQA IRCoT dev_subsampled.jsonl")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"HotpotQA data not found at {args.data} (use --data)", file=sys.stderr)
        return 2
    n = args.questions or (5 if args.quick else 20)
    questions, retriever = load(args.data, n)
    rows = asyncio.run(measure(questions, retriever, None if args.top_k == 5 else args.top_k))
    print(
        f"Prompt tokens per run (mean of {len(questions)} HotpotQA questions; {len(retriever.hits)} paragraphs,"
        f" docsearch top_k={args.top_k}); LLM calls per run: react and toolcall hops+1, rewoo 2"
    )
    print(table(rows))
    print("\nthe same, counting also the tool schemas sent to toolcall and its calls' arguments:")
    print(table(rows, "_recounted"))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
