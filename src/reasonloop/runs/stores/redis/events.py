"""How the Redis run store keeps events: one stream per run, written in batches, read and followed.

Each event is the entry ``0-{seq}`` of the run's ``events:{id}`` stream, so a resume after ``seq``
N is ``XRANGE (0-N +`` and a follower blocks with ``XREAD`` from its last id. Appends of every run
go out together, many per script call. Its own module, as the conversations are, so that the
store's file holds the runs' records, their steps and the instances' liveness.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from redis.exceptions import ResponseError

from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Event, event_adapter
from reasonloop.runs.models import RunRecord, is_terminal_event
from reasonloop.runs.stores.event_rows import EventRows
from reasonloop.runs.stores.redis.guard import guard, refused

__all__ = ["RedisEvents"]

_APPEND_CHUNK = 1000
"""Events per script call: a call runs inside Redis without interruption, so a backlog is
written in several, in order (a run's events must reach its stream in seq order)."""
_BLOCK_MS = 1000
"""How long a follower blocks on ``XREAD`` before re-checking the run's status."""


class RedisEvents:
    """Events in Redis, for :class:`~reasonloop.runs.stores.redis.store.RedisRunStore`, which provides
    the clients (``r``, and ``rb`` for blocking reads), key prefix (``p``), shown ``url``, the
    append script, the queue of appends waiting for it and ``get_run``."""

    r: Any
    rb: Any
    p: str
    url: str
    _pending: list[tuple[str, str, str, asyncio.Future[None]]]
    _flusher: asyncio.Task[None] | None
    _append_script: Any
    _run_script: Callable[[Any, list[Any]], Awaitable[Any]]
    get_run: Callable[[str], Awaitable[RunRecord | None]]

    async def append_event(self, run_id: str, event: Event, payload: str | None = None) -> None:
        """Add the event to the run's stream.

        Appends from all runs are group-committed: whatever arrives while one pipeline is in
        flight goes out in the next, so under load one round trip carries many events and each
        caller still returns only once Redis holds its event.
        """
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((f"{self.p}events:{run_id}", f"0-{event.seq}", payload or event.to_json(), fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_appends(), name="redis-run-store-appends")
        await fut

    async def _flush_appends(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            results: list[Any]
            try:
                results = await self._xadd_all([(key, entry_id, data) for key, entry_id, data, _ in batch])
            except RunStoreUnavailable as exc:
                results = [exc] * len(batch)
            for (key, entry_id, _, fut), result in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, ResponseError) and refused(result):
                    fut.set_exception(
                        RunStoreUnavailable(f"Redis at {self.url} refused the command: {result}", url=self.url)
                    )
                elif isinstance(result, ResponseError):
                    fut.set_exception(ValueError(f"{key} already has an entry at or after {entry_id}: {result}"))
                elif isinstance(result, RunStoreUnavailable):
                    fut.set_exception(RunStoreUnavailable(result.message, **result.details))
                elif isinstance(result, Exception):
                    fut.set_exception(RunStoreUnavailable(f"Redis at {self.url} failed: {result}", url=self.url))
                else:
                    fut.set_result(None)

    async def _xadd_all(self, entries: list[tuple[str, str, str]]) -> list[Any]:
        """``XADD key id e payload`` for each entry, in order, in as few commands as
        :data:`_APPEND_CHUNK` allows; one result per entry: its id, or the ResponseError
        Redis answered for it (a duplicate id, or a refusal such as a full memory).

        Raises:
            RunStoreUnavailable: Redis could not be reached, or refused the script itself.
        """
        results: list[Any] = []
        for start in range(0, len(entries), _APPEND_CHUNK):
            args = [part for entry in entries[start : start + _APPEND_CHUNK] for part in entry]
            results += await self._run_script(self._append_script, args)
        return results

    async def append_events(self, rows: EventRows) -> list[Exception | None]:
        """Add stamped events (``(run_id, seq, payload)``) to their runs' streams in one round trip.

        Returns:
            One entry per item: ``None``, or a ValueError when the stream already has that seq.

        Raises:
            RunStoreUnavailable: Redis could not be reached, refused the writes, or failed.
        """
        p = self.p
        results = await self._xadd_all([(f"{p}events:{run_id}", f"0-{seq}", payload) for run_id, seq, payload in rows])
        out: list[Exception | None] = []
        for (run_id, seq, _), result in zip(rows, results, strict=True):
            if isinstance(result, ResponseError) and refused(result):
                raise RunStoreUnavailable(f"Redis at {self.url} refused the command: {result}", url=self.url)
            if isinstance(result, ResponseError):
                out.append(ValueError(f"run {run_id} already has an entry at or after seq {seq}: {result}"))
            elif isinstance(result, Exception):
                raise RunStoreUnavailable(f"Redis at {self.url} failed: {result}", url=self.url)
            else:
                out.append(None)
        return out

    async def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        with guard(self.url):
            rows = await self.r.xrange(f"{self.p}events:{run_id}", min=f"(0-{after_seq}", max="+")
        return [event_adapter.validate_json(fields["e"]) for _, fields in rows]

    async def follow(self, run_id: str, after_seq: int = 0) -> AsyncIterator[Event]:
        stream = f"{self.p}events:{run_id}"
        last = after_seq
        for event in await self.events(run_id, after_seq):
            last = event.seq
            yield event
            if is_terminal_event(event):
                return
        while True:
            with guard(self.url):
                reply = await self.rb.xread({stream: f"0-{last}"}, block=_BLOCK_MS, count=500)
            if not reply:
                record = await self.get_run(run_id)
                if record is None:
                    return
                if record.finished:
                    for event in await self.events(run_id, last):
                        yield event
                    return
                continue
            for _, rows in reply:
                for _, fields in rows:
                    event = event_adapter.validate_json(fields["e"])
                    last = event.seq
                    yield event
                    if is_terminal_event(event):
                        return
