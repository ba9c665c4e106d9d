"""The scale-out run store: Redis, shared by every server instance.

Keys (all under ``[runs] redis_prefix``):

* ``run:{id}`` hash: ``data`` (the :class:`RunRecord` as JSON, as created), ``f:{field}`` (each
  record field set since, as JSON, read over ``data``), and ``status``, ``tenant``, ``instance``
  as themselves.
* ``steps:{id}`` hash: the run's finished steps while it is in flight (see
  :attr:`~reasonloop.runs.stores.protocol.StoreFeatures.step_journal`); its end deletes it.
* ``events:{id}`` stream: one entry per event with the explicit id ``0-{seq}``, so a resume
  after ``seq`` N is ``XRANGE (0-N +`` and a follower blocks with ``XREAD`` from its last id.
  Events and status changes are written by Lua scripts, many per call
  (:mod:`~reasonloop.runs.stores.redis.events`).
* ``runs:{tenant}`` sorted set of run ids by creation time; ``inflight`` set of unfinished runs.
* ``convrun:{conversation id}`` key: the conversation's latest run (one in flight at a time).
* ``stop:{id}`` key plus a message on the ``stops`` channel: every instance hears a stop and
  the one executing the run cancels it.
* ``instance:{id}`` key with a short TTL: the heartbeat that tells others an instance is alive.
* ``conv:{id}`` hash, ``conv:{id}:messages`` list, ``convs:{tenant}`` sorted set; ``feedback`` stream.

Finished runs, their events, conversations and feedback expire after ``[runs] ttl_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.runs.instance import instance_alive
from reasonloop.runs.models import RunRecord, check_record_fields
from reasonloop.runs.stores.protocol import StoreFeatures
from reasonloop.runs.stores.redis.conversations import RedisConversations
from reasonloop.runs.stores.redis.events import RedisEvents
from reasonloop.runs.stores.redis.guard import guard, shown_url
from reasonloop.runs.stores.redis.scripts import (
    ADD_MESSAGES,
    ADD_STEP,
    APPEND_EVENTS,
    CLAIM_RUN,
    CREATE_RUN,
    PUT_STEPS,
    TAKE_TOKEN,
    UPDATE_RUNS,
)

__all__ = ["RedisRunStore"]

_FIELD = "f:"
"""Prefix of the hash fields that hold record fields set after creation, each as JSON."""
_HEARTBEAT_TTL_S = 10
"""An instance whose heartbeat is older than this is dead (heartbeats are sent every 3 s)."""
_LONGEST_RUN_S = 86_400
"""Runs are dropped from their tenant's index ``ttl_s`` plus this long after they were created."""


_PLAIN_FIELDS = ("status", "tenant", "instance")
"""Record fields the run's hash also holds as themselves, for reads that skip the record."""


def _record_from(fields: dict[str, str]) -> RunRecord | None:
    """The run record a run's hash holds: the record written at creation, with the fields set
    since (``f:<name>``, JSON) over it; None when there is no such run."""
    data = fields.get("data")
    if not data:
        return None
    record = RunRecord.model_validate_json(data)
    changed = {name[len(_FIELD) :]: json.loads(value) for name, value in fields.items() if name.startswith(_FIELD)}
    return record.model_copy(update=changed) if changed else record


class RedisRunStore(RedisEvents, RedisConversations):
    """Run store on a Redis server.

    Args:
        settings: ``[runs]`` settings (``redis_url``, ``redis_prefix``, ``ttl_s``).
        kb_path: Unused (accepted so every store is built the same way).
    """

    features = StoreFeatures(
        batch_appends=True,
        batch_updates=True,
        continuing_runs=True,
        stop_keys=True,
        rate_buckets=True,
        step_journal=True,
    )

    def __init__(self, settings: RunsSettings | None = None, *, kb_path: str = "") -> None:
        self.settings = settings or RunsSettings(store="redis")
        self.url = shown_url(self.settings.redis_url)
        """The server's URL as messages show it (without a password)."""
        self.p = self.settings.redis_prefix
        self.ttl = self.settings.ttl_s
        self._r: aioredis.Redis | None = None
        self._blocking: aioredis.Redis | None = None
        """A second client for XREAD BLOCK and pub/sub, which hold a connection while they wait."""
        self._pending: list[tuple[str, str, str, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._pending_steps: list[tuple[str, str, str, asyncio.Future[None]]] = []
        self._step_flusher: asyncio.Task[None] | None = None
        # The scripts of reasonloop.runs.stores.redis.scripts on the command client, once open.
        self._append_script: Any = None
        self._create_run_script: Any = None
        self._update_script: Any = None
        self._add_messages_script: Any = None
        self._put_step_script: Any = None
        self._claim_script: Any = None
        self._add_step_script: Any = None
        self._take_token_script: Any = None

    @property
    def r(self) -> aioredis.Redis:
        if self._r is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        return self._r

    async def open(self) -> None:
        options: dict[str, Any] = {"decode_responses": True, "socket_connect_timeout": 3, "health_check_interval": 30}
        pool = aioredis.BlockingConnectionPool.from_url(
            self.settings.redis_url, max_connections=self.settings.redis_max_connections, timeout=30, **options
        )
        client = aioredis.Redis(connection_pool=pool)
        try:
            with guard(self.url):
                await client.ping()
        except RunStoreUnavailable:
            await client.aclose()
            await pool.disconnect()
            raise
        self._r = client
        self._append_script = client.register_script(APPEND_EVENTS)
        self._update_script = client.register_script(UPDATE_RUNS)
        self._add_messages_script = client.register_script(ADD_MESSAGES)
        self._create_run_script = client.register_script(CREATE_RUN)
        self._put_step_script = client.register_script(PUT_STEPS)
        self._claim_script = client.register_script(CLAIM_RUN)
        self._add_step_script = client.register_script(ADD_STEP)
        self._take_token_script = client.register_script(TAKE_TOKEN)
        self._blocking = aioredis.Redis.from_url(self.settings.redis_url, max_connections=100_000, **options)

    async def _run_script(self, script: Any, args: list[Any]) -> Any:
        """Run one of the store's scripts with ``args`` (its ARGV)."""
        if script is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        with guard(self.url):
            return await script(args=args)

    async def close(self) -> None:
        for flusher in (self._flusher, self._step_flusher):
            if flusher is not None:
                await asyncio.gather(flusher, return_exceptions=True)
        # The scripts go with the client: run after close, they would open new connections to it.
        self._append_script = self._update_script = self._add_messages_script = self._create_run_script = None
        self._put_step_script = self._claim_script = self._take_token_script = self._add_step_script = None
        for client in (self._r, self._blocking):
            if client is not None:
                await client.aclose()
                await client.connection_pool.disconnect()
        self._r = self._blocking = None

    @property
    def rb(self) -> aioredis.Redis:
        if self._blocking is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        return self._blocking

    # -- runs -------------------------------------------------------------------------------
    async def create_run(self, record: RunRecord) -> None:
        await self._create_run(record, sole=False)

    async def create_continuing_run(self, record: RunRecord) -> str | None:
        """Record ``record``, which continues its conversation, unless another run of the
        conversation is in flight on any instance: then nothing is recorded, and that run's id
        is returned."""
        return await self._create_run(record, sole=True)

    async def _create_run(self, record: RunRecord, *, sole: bool) -> str | None:
        p, index = self.p, f"{self.p}runs:{record.tenant}"
        claim = f"{p}convrun:{record.conversation_id}" if record.conversation_id else ""
        # The tenant's index lets go of runs long expired (a run's record lives until ttl_s after
        # its end, so this spares any run that ended within ttl_s, unless it ran for a day).
        bound = f"({record.created_at - self.ttl - _LONGEST_RUN_S}"
        args = [
            f"{p}run:{record.run_id}", record.run_id, record.model_dump_json(), record.status, record.tenant,
            record.instance, index, record.created_at, bound, f"{p}inflight", claim, f"{p}run:", self.ttl,
            "1" if sole else "0",
        ]  # fmt: skip
        return await self._run_script(self._create_run_script, args)

    async def update_run(self, run_id: str, **fields: Any) -> None:
        await self.update_runs([(run_id, fields)])

    async def update_runs(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Set fields of several runs' records in one script call: each field goes in a hash
        field of its own, read back over the record (:func:`_record_from`), so a record is not
        fetched, parsed and written back whole for every change of status."""
        for _, fields in updates:
            check_record_fields(fields)
        p = self.p
        args: list[Any] = [f"{p}inflight", self.ttl]
        for run_id, fields in updates:
            pairs: list[Any] = []
            for name, value in fields.items():
                pairs += (_FIELD + name, json.dumps(value, ensure_ascii=False))
                if name in _PLAIN_FIELDS:  # also kept plain: read without the record
                    pairs += (name, value)
            if pairs:
                args += (
                    f"{p}run:{run_id}",
                    run_id,
                    f"{p}events:{run_id}",
                    f"{p}steps:{run_id}",
                    len(pairs) // 2,
                    *pairs,
                )
        if len(args) > 2:
            await self._run_script(self._update_script, args)

    async def get_run(self, run_id: str) -> RunRecord | None:
        with guard(self.url):
            fields = await self.r.hgetall(f"{self.p}run:{run_id}")
        return _record_from(fields)

    async def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        with guard(self.url):
            ids = await self.r.zrevrange(f"{self.p}runs:{tenant}", 0, limit - 1)
            pipe = self.r.pipeline(transaction=False)
            for run_id in ids:
                pipe.hgetall(f"{self.p}run:{run_id}")
            rows = await pipe.execute()
            records = [_record_from(row) for row in rows]
            expired = [run_id for run_id, record in zip(ids, records, strict=True) if record is None]
            if expired:
                await self.r.zrem(f"{self.p}runs:{tenant}", *expired)
        return [record for record in records if record is not None]

    async def inflight_runs(self, exclude_instance: str | None = None) -> list[RunRecord]:
        with guard(self.url):
            ids = sorted(await self.r.smembers(f"{self.p}inflight"))
            pipe = self.r.pipeline(transaction=False)  # one round trip, not one per run
            for run_id in ids:
                pipe.hgetall(f"{self.p}run:{run_id}")
            rows = await pipe.execute()
        records = [
            _record_from(row) for row in rows if exclude_instance is None or row.get("instance") != exclude_instance
        ]
        return [r for r in records if r is not None and not r.finished]

    async def claim_run(self, run_id: str, instance: str, by: str) -> bool:
        """Record run ``run_id``, in flight on ``instance``, as executed by ``by``; False when it is
        not (any more) in flight on ``instance``. One script: of claims made at once, one wins."""
        key = f"{self.p}run:{run_id}"
        return bool(await self._run_script(self._claim_script, [key, instance, by, json.dumps(by)]))

    # -- the steps of runs in flight -------------------------------------------------------------
    async def put_step(self, run_id: str, key: str, value: str) -> None:
        """Keep a finished step of run ``run_id`` (in the run's ``steps`` hash, deleted at its end).

        Steps of all runs are written together, as events are: what arrives while one command is
        in flight goes out in the next, one script call for all of them.
        """
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending_steps.append((run_id, key, value, fut))
        if self._step_flusher is None or self._step_flusher.done():
            self._step_flusher = asyncio.create_task(self._flush_steps(), name="redis-run-store-steps")
        await fut

    async def _flush_steps(self) -> None:
        p = self.p
        while self._pending_steps:
            batch, self._pending_steps = self._pending_steps, []
            args: list[str] = []
            for run_id, key, value, _ in batch:
                args += (f"{p}run:{run_id}", f"{p}steps:{run_id}", key, value)
            failure: BaseException | None = None
            try:
                await self._run_script(self._put_step_script, args)
            except RunStoreUnavailable as exc:
                failure = exc
            except Exception as exc:  # what the callers get, whatever it is: no future is left waiting
                failure = RunStoreUnavailable(f"Redis at {self.url} failed: {exc}", url=self.url)
            for *_, fut in batch:
                if fut.done():
                    continue
                if failure is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(RunStoreUnavailable(str(failure)))

    async def add_step(self, run_id: str, key: str, value: str) -> bool:
        """Keep step ``key`` of run ``run_id`` unless the run has one of that key or has ended; True
        when kept (of writers adding it at once, one is). Written at once, not batched."""
        p = self.p
        return bool(
            await self._run_script(self._add_step_script, [f"{p}run:{run_id}", f"{p}steps:{run_id}", key, value])
        )

    async def steps(self, run_id: str, prefix: str = "") -> dict[str, str]:
        with guard(self.url):
            if not prefix:
                return await self.r.hgetall(f"{self.p}steps:{run_id}")  # type: ignore[no-any-return]
            pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
            return {k: v async for k, v in self.r.hscan_iter(f"{self.p}steps:{run_id}", match=pattern)}

    # -- stop requests and liveness ------------------------------------------------------------
    async def request_stop(self, run_id: str) -> None:
        with guard(self.url):
            await self.r.set(f"{self.p}stop:{run_id}", "1", ex=self.ttl)
            await self.r.publish(f"{self.p}stops", run_id)

    async def stop_requests(self, instance: str) -> AsyncIterator[str]:
        pubsub = self.rb.pubsub(ignore_subscribe_messages=True)
        task = asyncio.current_task()
        try:
            with guard(self.url):
                await pubsub.subscribe(f"{self.p}stops")
            while True:
                # redis-py can swallow a cancellation that arrives while it connects: the loop
                # would then go on for ever, and whoever cancelled it wait for ever.
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError
                with guard(self.url):
                    message = await pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "message":
                    yield str(message["data"])
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(pubsub.aclose())

    async def stops_requested(self, run_ids: Sequence[str]) -> set[str]:
        """Which of ``run_ids`` have a stop request, in one round trip (a stop published while an
        instance was not listening is still found here)."""
        if not run_ids:
            return set()
        with guard(self.url):
            values = await self.r.mget([f"{self.p}stop:{run_id}" for run_id in run_ids])
        return {run_id for run_id, value in zip(run_ids, values, strict=True) if value is not None}

    async def heartbeat(self, instance: str) -> None:
        with guard(self.url):
            await self.r.set(f"{self.p}instance:{instance}", str(time.time()), ex=_HEARTBEAT_TTL_S)

    async def instance_alive(self, instance: str) -> bool:
        local = instance_alive(instance)
        if local is not None:
            return local
        with guard(self.url):
            return bool(await self.r.exists(f"{self.p}instance:{instance}"))

    async def take_token(self, key: str, rate: float, burst: int) -> float:
        """Take one token from the rate bucket ``key`` every instance shares (``{prefix}rate:{key}``,
        :data:`~reasonloop.runs.stores.redis.scripts.TAKE_TOKEN`); 0 when taken, else the seconds
        until there is one."""
        try:
            wait = float(await self._run_script(self._take_token_script, [f"{self.p}rate:{key}", repr(rate), burst]))
        except (ResponseError, TypeError, ValueError) as exc:  # a server that cannot run the script
            raise RunStoreUnavailable(f"Redis at {self.url} cannot keep rate buckets: {exc}", url=self.url) from exc
        return wait if math.isfinite(wait) and wait > 0 else 0.0

    async def add_feedback(self, feedback: dict[str, Any]) -> None:
        with guard(self.url):
            # Kept ttl_s like runs and conversations: entries older than that are let go as new ones come.
            oldest = f"{int((time.time() - self.ttl) * 1000)}-0"
            await self.r.xadd(
                f"{self.p}feedback", {"f": json.dumps(feedback, ensure_ascii=False)}, minid=oldest, approximate=False
            )
