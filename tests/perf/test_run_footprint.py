"""What a streaming run keeps alive: every object the garbage collector tracks is scanned by each
young collection, and at thousands of concurrent runs those pauses are what every stream waits on."""

from __future__ import annotations

import asyncio
import gc

from reasonloop.config import RunsSettings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from tests.llm_runner import LLMRunner
from tests.waiting import await_until

TRACKED_PER_RUN = 45
"""Budget of tracked objects per run mid-stream. Measured at 44 (43.8 to 44.0): the run's record and request,
its task and coroutines, the model's two async generators (its own and the base class's, which
turns chunks into the run's events) with their pending steps, the runner's hand-over object and
converter, the model's sleep and the wait deadline's timer, the lists of its text and events. It
was 45 while the runner had an async generator of its own between the model and the run; 47 while
the run kept a dictionary of attributes, the wait deadline's timer its own copy of the context
and the runner its usage from the start; 52 while the run's slot semaphore left a bound
``__aexit__`` in the run's frame, the model's stream kept its first step's awaitable and the runner kept its own copy of the prompt."""


async def test_a_streaming_run_keeps_few_objects_for_the_collector_to_scan(store):
    settings = RunsSettings(max_concurrent=500, max_queued=500)
    # Long enough (about 10 minutes each) that no run ends before the count however slowly they start;
    # they are stopped after it.
    model = ScriptedProvider(replies=["tok " * 50_000], chunk_size=4, delay_s=0.05, repeat_last=True)
    manager = RunManager(store, LLMRunner(model), settings)
    await manager.open()
    try:

        async def mid_stream(run_ids: list[str]) -> bool:
            """Every run a few deltas in: during its first two or three a run still holds what its start
            made (about 58 objects then), so a count taken at a fixed time after the start depended
            on how fast a loaded machine got the runs going."""
            for run_id in run_ids:
                if (await manager.get(run_id)).last_seq < 6:  # its start, then five deltas
                    return False
            return True

        async def streaming(n: int) -> list[str]:
            records = await asyncio.gather(*(manager.start(RunRequest(question="q")) for _ in range(n)))
            run_ids = [record.run_id for record in records]
            await await_until(lambda: mid_stream(run_ids), what="every run a few deltas in")
            return run_ids

        warm = await streaming(20)
        gc.collect()
        before = len(gc.get_objects())
        runs = await streaming(200)
        gc.collect()
        per_run = (len(gc.get_objects()) - before) / len(runs)
        statuses = [(await manager.get(run_id)).status for run_id in runs]
        assert statuses == ["running"] * len(runs)  # measured mid-stream, not after the end
        assert 20 < per_run <= TRACKED_PER_RUN, per_run
        for run_id in warm + runs:
            await manager.stop(run_id)
    finally:
        await manager.close()
