"""A process whose run manager starts one run and leaves it waiting for approval of its first tool
call, until it is killed (SIGKILL) or stopped (SIGTERM: it closes its run manager as a server that
stops does), for tests/runs/test_approvals_processes.py.

Usage: ``python -m tests.runs.approval_worker --dir DIR (--sqlite PATH | --redis URL --prefix P)``;
the run's id is written to ``DIR/run_id`` once the run waits and the store holds its ask.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from reasonloop.config import ApprovalSettings
from reasonloop.runs.manager import RunManager
from tests.runs.approval_helpers import AskingModel, approving_runner, next_request, request
from tests.runs.resume_helpers import Tally, worker_arguments, worker_store

APPROVALS = ApprovalSettings(tools={"count": "always"}, poll_interval_s=0.1)


async def main() -> None:
    args = worker_arguments()
    here = Path(args.dir)
    runs, store = worker_store(args)
    await store.open()
    model = AskingModel(calls=2, log=here / "model.log")
    runner = approving_runner(here, runs, Tally(here / "tool.log"), model, APPROVALS)
    manager = RunManager(store, runner, runs, approvals=APPROVALS)
    await manager.open()
    record = await manager.start(request())
    await next_request(manager, record.run_id)
    for _ in range(3000):  # until the store says the run waits (its status is recorded behind its events)
        stored = await store.get_run(record.run_id)
        if stored is not None and stored.status == "awaiting_approval":
            break
        await asyncio.sleep(0.02)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)  # before the test may send it
    (here / "run_id").write_text(record.run_id)
    await stopping.wait()  # until killed, or stopped
    await manager.close()
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
