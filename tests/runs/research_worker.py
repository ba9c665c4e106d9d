"""A process whose run manager starts one research run and stays blocked in the search of its third
sub-agent, the other two finished and checkpointed, until it is killed (for the kill -9 tests of
tests/runs/test_research_resume.py).

Usage: ``python -m tests.runs.research_worker --dir DIR (--sqlite PATH | --redis URL --prefix P)``;
the run's id is written to ``DIR/run_id`` once the run is blocked there and the store holds the
checkpoints of the two finished sub-researches.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from reasonloop.runs.manager import RunManager
from tests.runs.research_resume import CountingResearchModel, Searches, request, research_runner
from tests.runs.resume_helpers import worker_arguments, worker_store


async def main() -> None:
    args = worker_arguments()
    here = Path(args.dir)
    runs, store = worker_store(args)
    await store.open()
    searches = Searches(here / "search.log", gated=True)
    manager = RunManager(store, research_runner(here, runs, searches, CountingResearchModel(here / "model.log")), runs)
    await manager.open()
    record = await manager.start(request())
    await asyncio.wait_for(searches.blocked.wait(), 60)
    run = manager.execution(record.run_id)
    assert run is not None and run.journal is not None
    async with asyncio.timeout(60):
        while True:  # until both finished sub-researches are checkpointed in the store
            await run.journal.flush()
            kept = await store.steps(record.run_id)
            if sum(1 for key in kept if key.startswith("research:")) == 2:
                break
            await asyncio.sleep(0.02)
    (here / "run_id").write_text(record.run_id)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main())
