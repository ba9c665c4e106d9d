"""A process that opens a knowledge base and does one thing to it, for the tests of many processes.

    python tests/kb/kb_process.py KB ingest FOLDER [DELAY]   ingest a folder (DELAY s per embedding call)
    python tests/kb/kb_process.py KB records N DELAY         ingest N records slowly, 3 chunks a commit
    python tests/kb/kb_process.py KB delete ID...            delete documents one by one
    python tests/kb/kb_process.py KB stats                   print the stats as JSON
    python tests/kb/kb_process.py KB cli ARG...              run the reasonloop CLI (``--kb KB`` added)

Every one uses the tests' hash embedder. Results are printed as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from reasonloop.config import Settings  # noqa: E402
from reasonloop.kb.knowledge_base import KnowledgeBase  # noqa: E402
from tests.kb.helpers import HashEmbedder  # noqa: E402


class SlowEmbedder(HashEmbedder):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def embed_passages(self, texts):
        await asyncio.sleep(self.delay)
        return await super().embed_passages(texts)


def records(n: int) -> list[tuple[str, str, str]]:
    return [(f"rec{i}", f"Record {i}", f"record number {i} mentions recword{i} and shared text") for i in range(n)]


def run_cli(kb_dir: str, args: list[str]) -> None:
    import reasonloop.kb.knowledge_base as knowledge_base
    from reasonloop.cli import main as cli

    knowledge_base.create_embedder = lambda *a, **k: HashEmbedder()  # type: ignore[assignment]
    cli([*args, "--kb", kb_dir])


async def main(kb_dir: str, action: str, args: list[str]) -> None:
    commit_chunks = 3 if action == "records" else 64
    delay = float(args[1]) if action in ("ingest", "records") and len(args) > 1 else 0.0
    settings = Settings(kb={"options": {"commit_chunks": commit_chunks}})
    kb = KnowledgeBase.open(kb_dir, settings=settings, embedder=SlowEmbedder(delay))
    try:
        if action == "ingest":
            report = await kb.ingest([args[0]])
            print(json.dumps({"added": len(report.added), "failed": report.failed}))
        elif action == "records":
            report = await kb.ingest_records(records(int(args[0])))
            print(json.dumps({"added": len(report.added), "unchanged": len(report.unchanged)}))
        elif action == "delete":
            removed = []
            for doc_id in args:
                removed.extend(await kb.delete(doc_id))
                await asyncio.sleep(0.05)
            print(json.dumps({"deleted": len(removed)}))
        elif action == "stats":
            stats = await kb.stats()
            print(json.dumps({"documents": stats.documents, "chunks": stats.chunks}))
        else:
            raise SystemExit(f"unknown action {action!r}")
    finally:
        await kb.close()


if __name__ == "__main__":
    if sys.argv[2] == "cli":
        run_cli(sys.argv[1], sys.argv[3:])
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
