"""What a streaming run keeps alive: every object the garbage collector tracks is scanned by each
young collection, and at thousands of concurrent runs those pauses are what every stream waits on."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from reasonloop.config import RunsSettings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRequest
from tests.llm_runner import LLMRunner
from tests.waiting import await_until

TRACKED_PER_RUN = 45
"""Budget of tracked objects per run mid-stream. Measured at 44 (44.4 to 44.5, beside two busy loops as
well as on an idle machine): the run's record and request,
its task and coroutines, the model's two async generators (its own and the base class's, which
turns chunks into the run's events) with their pending steps, the runner's hand-over object and
converter, the model's sleep and the wait deadline's timer, the lists of its text and events. It
was 45 while the runner had an async generator of its own between the model and the run; 47 while
the run kept a dictionary of attributes, the wait deadline's timer its own copy of the context
and the runner its usage from the start; 52 while the run's slot semaphore left a bound
``__aexit__`` in the run's frame, the model's stream kept its first step's awaitable and the runner kept its own copy of the prompt."""


SETTLED_WITHIN = 10
"""Two counts this close (of some 10,000 more for the runs) are of the same state."""


class ParkingModel(ScriptedProvider):
    """The scripted model at a model's pace until :meth:`park`: then each stream's next pause
    lasts an hour, and :attr:`parked` counts the streams in it. Every run is then at the same
    point, whatever the machine's load did to their pace, and the count is of that point."""

    def __init__(self, **kwargs: Any) -> None:
        self._pace = 0.0
        self._parking = False
        self._reads_parked = 0
        super().__init__(**kwargs)

    @property
    def delay_s(self) -> float:  # read twice before each pause: `if self.delay_s:`, `sleep(self.delay_s)`
        if not self._parking:
            return self._pace
        self._reads_parked += 1
        return 3600.0

    @delay_s.setter
    def delay_s(self, value: float) -> None:
        self._pace = value

    def park(self, parking: bool = True) -> None:
        """From now on, each stream's next pause is the hour (or, with ``False``, the model's
        pace again for the streams that have not parked)."""
        self._parking = parking

    @property
    def parked(self) -> int:
        return self._reads_parked // 2


async def test_a_streaming_run_keeps_few_objects_for_the_collector_to_scan(store):
    settings = RunsSettings(max_concurrent=500, max_queued=500)
    model = ParkingModel(replies=["tok " * 50_000], chunk_size=4, delay_s=0.05, repeat_last=True)
    manager = RunManager(store, LLMRunner(model), settings)
    await manager.open()
    try:

        async def mid_stream(run_ids: list[str]) -> bool:
            """Every run a few deltas in: during its first two or three a run still holds what its start
            made (about 58 objects then)."""
            for run_id in run_ids:
                if (await manager.get(run_id)).last_seq < 6:  # its start, then five deltas
                    return False
            return True

        async def streaming(n: int) -> list[str]:
            records = await asyncio.gather(*(manager.start(RunRequest(question="q")) for _ in range(n)))
            run_ids = [record.run_id for record in records]
            await await_until(lambda: mid_stream(run_ids), what="every run a few deltas in")
            return run_ids

        async def parked(run_ids: list[str]) -> list[str]:
            """Every stream at the same point (in its hour's pause), whatever the machine's load did
            to their pace."""
            already = model.parked
            model.park()
            await await_until(lambda: model.parked == already + len(run_ids), what="every stream parked")
            model.park(False)
            return run_ids

        async def settled_count(run_ids: list[str]) -> int:
            """Tracked objects once the run store has written what it was handed: its writer runs at
            idle priority, so on a busy machine runs wait on its futures for a while (about 14 objects
            more each). A read goes through the same writer, after what came before it."""
            counts: list[int] = []

            async def settled() -> bool:
                await store.get_run(run_ids[0])
                gc.collect()
                counts.append(len(gc.get_objects()))
                return len(counts) > 1 and abs(counts[-1] - counts[-2]) <= SETTLED_WITHIN

            await await_until(settled, what="the run store's writes done")
            return counts[-1]

        warm = await parked(await streaming(20))
        before = await settled_count(warm)
        runs = await parked(await streaming(200))
        per_run = (await settled_count(runs) - before) / len(runs)
        statuses = [(await manager.get(run_id)).status for run_id in runs]
        assert statuses == ["running"] * len(runs)  # measured mid-stream, not after the end
        assert 20 < per_run <= TRACKED_PER_RUN, per_run
        for run_id in warm + runs:
            await manager.stop(run_id)
    finally:
        await manager.close()
