"""A process whose run manager starts one counting run and stays blocked in its second tool call,
until it is killed (for the kill -9 tests of tests/runs/test_resume_processes.py).

Usage: ``python -m tests.runs.resume_worker --dir DIR (--sqlite PATH | --redis URL --prefix P)``;
the run's id is written to ``DIR/run_id`` once the run is blocked there and the store holds the
steps it finished (the run does not wait for those writes: the test must, to count exactly).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from reasonloop.runs.manager import RunManager
from tests.runs.resume_helpers import CountingModel, Tally, counting_runner, request, worker_arguments, worker_store


async def main() -> None:
    args = worker_arguments()
    here = Path(args.dir)
    runs, store = worker_store(args)
    await store.open()
    tally = Tally(here / "tool.log", block_n=1)
    manager = RunManager(store, counting_runner(here, runs, tally, CountingModel(here / "model.log")), runs)
    await manager.open()
    record = await manager.start(request())
    await tally.wait_blocked()
    run = manager.execution(record.run_id)
    assert run is not None and run.journal is not None
    await run.journal.flush()
    (here / "run_id").write_text(record.run_id)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main())
