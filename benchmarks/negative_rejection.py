"""Does the answer say "the documents don't say" when they don't, and only then? RGB (Chinese).

RGB's Chinese set gives each question passages that hold its answer (``positive``) and passages on
the same subject that do not (``negative``). Two knowledge bases are built from the first N
questions: one of their negative passages only, one of their positive passages only. Every
question is asked over both with the ``qa`` strategy (which, with a base model, runs the evidence
answer), and the answers are counted:

- over the negatives, the right answer is to abstain (``Answer.abstained``): the rejection rate,
  beside the limit (100%) and beside what a system that never abstains gets (0%);
- over the positives, abstaining is a miss: the share answered and the share whose answer holds the
  gold answer, so that a system that always abstains cannot look good.

Run::

    python benchmarks/negative_rejection.py --quick          # 20 questions
    python benchmarks/negative_rejection.py --limit 100      # the figures in benchmarks/README.md
    python benchmarks/negative_rejection.py --llm openai:gpt-4o-mini

The data is read from ``../shared/data/chinese/rgb_zh/zh_refine.json`` (never copied).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from reasonloop.agents import Agent
from reasonloop.config import LLMSettings
from reasonloop.kb import KnowledgeBase
from reasonloop.llm.resolve import create_llm

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "chinese" / "rgb_zh" / "zh_refine.json"


def _load(limit: int) -> list[dict[str, Any]]:
    items = []
    with DATA.open(encoding="utf-8") as f:
        for line in f:
            items.append(json.loads(line))
            if len(items) >= limit:
                break
    return items


def _answers(item: dict[str, Any]) -> list[str]:
    gold = item["answer"]
    flat: list[str] = []
    for a in gold if isinstance(gold, list) else [gold]:
        flat.extend(a if isinstance(a, list) else [a])
    return [str(a) for a in flat if str(a).strip()]


async def _ask_all(
    kb_dir: Path, records: list[tuple[str, str, str]], items: list[dict[str, Any]], llm: Any
) -> list[dict[str, Any]]:
    out = []
    async with KnowledgeBase.open(kb_dir) as kb:
        await kb.ingest_records(records)
        agent = Agent("qa", llm=llm, kb=kb)
        for item in items:
            started = time.perf_counter()
            result = await agent.run(item["query"])
            out.append(
                {
                    "id": item["id"],
                    "abstained": result.abstained,
                    "holds_gold": any(a in result.content for a in _answers(item)),
                    "seconds": time.perf_counter() - started,
                    "answer": result.content[:200],
                }
            )
    return out


def _records(items: list[dict[str, Any]], key: str) -> list[tuple[str, str, str]]:
    return [(f"{item['id']}-{key}-{i}", "", text) for item in items for i, text in enumerate(item[key]) if text.strip()]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=100, help="questions (of 300)")
    parser.add_argument("--quick", action="store_true", help="20 questions")
    parser.add_argument("--llm", default="local", help="provider:model (default: the embedded model)")
    parser.add_argument("--json", type=Path, help="also write every answer here")
    args = parser.parse_args()
    if not DATA.is_file():
        sys.exit(f"missing {DATA}")
    items = _load(20 if args.quick else args.limit)
    llm = create_llm(args.llm, LLMSettings(provider=args.llm.split(":")[0], temperature=0, max_tokens=64))
    work = Path(tempfile.mkdtemp(prefix="rgb-"))
    try:
        negative = await _ask_all(work / "neg", _records(items, "negative"), items, llm)
        positive = await _ask_all(work / "pos", _records(items, "positive"), items, llm)
    finally:
        await llm.aclose()
        shutil.rmtree(work, ignore_errors=True)
    n = len(items)
    rejected = sum(r["abstained"] for r in negative)
    wrong_neg = sum(not r["abstained"] for r in negative)
    answered = sum(not r["abstained"] for r in positive)
    holds = sum(r["holds_gold"] and not r["abstained"] for r in positive)
    print(f"RGB zh ({n} questions), qa with {llm.name}\n")
    print("| passages | n | abstained | answered | answer holds the gold | limit | never-abstain system |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    print(
        f"| negatives only (answer absent) | {n} | **{rejected / n:.0%}** | {wrong_neg / n:.0%} | - | 100% abstained | 0% abstained |"
    )
    print(
        f"| positives only (answer present) | {n} | {1 - answered / n:.0%} | {answered / n:.0%} | **{holds / n:.0%}** | 100% holds | - |"
    )
    secs = [r["seconds"] for r in negative + positive]
    print(f"\n{sum(secs) / len(secs):.2f} s/question")
    if args.json:
        args.json.write_text(json.dumps({"negative": negative, "positive": positive}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
