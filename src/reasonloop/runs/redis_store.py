"""The scale-out run store: Redis, shared by every server instance.

Keys (all under ``[runs] redis_prefix``):

* ``run:{id}`` hash: ``data`` (the :class:`RunRecord` as JSON, as created), ``f:{field}`` (each
  record field set since, as JSON, read over ``data``), and ``status``, ``tenant``, ``instance``
  as themselves.
* ``events:{id}`` stream: one entry per event with the explicit id ``0-{seq}``, so a resume
  after ``seq`` N is ``XRANGE (0-N +`` and a follower blocks with ``XREAD`` from its last id.
  Events and status changes are written by Lua scripts, many per call.
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
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    ExecAbortError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    WatchError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError

from reasonloop.config import RunsSettings
from reasonloop.errors import RunStoreUnavailable
from reasonloop.events import Event, event_adapter
from reasonloop.runs.event_rows import EventRows
from reasonloop.runs.models import TERMINAL, ConversationRecord, RunRecord, check_record_fields
from reasonloop.runs.store import instance_alive, is_terminal_event

__all__ = ["RedisRunStore", "shown_url"]

_APPEND_SCRIPT = """
local results = {}
for i = 1, #ARGV, 3 do
  results[#results + 1] = redis.pcall('XADD', ARGV[i], ARGV[i + 1], 'e', ARGV[i + 2])
end
return results
"""
"""XADD of each ``key, id, payload`` triple in ARGV; one reply per entry: its id, or its error.

Many events in one command: a pipeline of XADDs costs the client a command to build and a
reply to parse per event, which at thousands of streamed tokens a second kept the event
loop of a server busier than everything else it did for those tokens
(``benchmarks/ws_load.py --store redis``). Keys come in ARGV, not KEYS: the store assumes one
Redis server (or a primary), not a cluster."""
_APPEND_CHUNK = 1000
"""Events per script call: a call runs inside Redis without interruption, so a backlog is
written in several, in order (a run's events must reach its stream in seq order)."""
_UPDATE_SCRIPT = """
local inflight, ttl, i = ARGV[1], ARGV[2], 3
while i <= #ARGV do
  local key, run_id, events, first = ARGV[i], ARGV[i + 1], ARGV[i + 2], i + 4
  i = first + 2 * tonumber(ARGV[i + 3])
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, unpack(ARGV, first, i - 1))
    local status = redis.call('HGET', key, 'status')
    if status and string.find('%s', ',' .. status .. ',', 1, true) then
      redis.call('SREM', inflight, run_id)
      redis.call('EXPIRE', key, ttl)
      redis.call('EXPIRE', events, ttl)
    end
  end
end
return 0
""" % ("," + ",".join(sorted(TERMINAL)) + ",")
"""Set fields of runs' hashes: ARGV is the in-flight set and the ttl, then per run its hash key,
id, events key, how many field/value pairs follow, and the pairs. An unknown run is skipped; a
run whose status is now terminal leaves the in-flight set and starts to expire. One round trip
for any number of runs, and the records are neither read nor parsed by the server process
(:func:`_record_from` reads the fields back over the record)."""
_ADD_MESSAGES_SCRIPT = """
local head = redis.call('GET', ARGV[1])
if not head then return 0 end
local tenant = cjson.decode(head)['tenant']
head = string.gsub(head, '"updated_at":[-+%d.eE]+', '"updated_at":' .. ARGV[4], 1)
redis.call('RPUSH', ARGV[2], unpack(ARGV, 8))
redis.call('SET', ARGV[1], head, 'EX', ARGV[3])
redis.call('EXPIRE', ARGV[2], ARGV[3])
redis.call('ZADD', ARGV[6] .. tenant, ARGV[4], ARGV[5])
redis.call('ZREMRANGEBYSCORE', ARGV[6] .. tenant, '-inf', ARGV[7])
return 1
"""
"""Messages added to a conversation that still exists (ARGV: its key, its messages' key, the
ttl, the time, its id, the prefix of the tenants' indexes, the index's lower bound, then the
messages as JSON), with its ``updated_at`` and its place in its tenant's index moved to the
time. One round trip, and the conversation's record is not read or parsed by the server
process: its ``updated_at`` is replaced in its JSON text (a number, written by pydantic; a
string field holding those characters has its quotes escaped and cannot match)."""
_CREATE_RUN_SCRIPT = """
local run_id, claim = ARGV[2], ARGV[11]
if claim ~= '' then
  if ARGV[14] == '1' then
    local holder = redis.call('GET', claim)
    if holder and holder ~= run_id then
      local status = redis.call('HGET', ARGV[12] .. holder, 'status')
      if status and not string.find('%s', ',' .. status .. ',', 1, true) then return holder end
    end
  end
  redis.call('SET', claim, run_id, 'EX', ARGV[13])
end
redis.call('HSET', ARGV[1], 'data', ARGV[3], 'status', ARGV[4], 'tenant', ARGV[5], 'instance', ARGV[6])
redis.call('ZADD', ARGV[7], ARGV[8], run_id)
redis.call('ZREMRANGEBYSCORE', ARGV[7], '-inf', ARGV[9])
redis.call('SADD', ARGV[10], run_id)
return false
""" % ("," + ",".join(sorted(TERMINAL)) + ",")
"""A run recorded (ARGV: its hash key, id, record, status, tenant, instance, its tenant's index, its
creation time, the index's lower bound, the in-flight set, its conversation's ``convrun`` key or
'', the prefix of run keys, the ttl, and '1' when it must be its conversation's only run in
flight). Every run of a conversation names itself in the conversation's ``convrun`` key; with '1',
a run whose predecessor there is still in flight is not recorded, and the predecessor's id is
the reply. One script: the check and the record are one step for every instance."""
_FIELD = "f:"
"""Prefix of the hash fields that hold record fields set after creation, each as JSON."""
_HEARTBEAT_TTL_S = 10
"""An instance whose heartbeat is older than this is dead (heartbeats are sent every 3 s)."""
_LONGEST_RUN_S = 86_400
"""Runs are dropped from their tenant's index ``ttl_s`` plus this long after they were created."""
_BLOCK_MS = 1000
"""How long a follower blocks on ``XREAD`` before re-checking the run's status."""


_REFUSALS = (OutOfMemoryError, ReadOnlyError, ExecAbortError, NoPermissionError)
_REFUSAL_PREFIXES = ("MISCONF", "MASTERDOWN", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "LOADING")


def _refused(exc: ResponseError) -> bool:
    """Whether Redis refused a command for its own state (memory full, a replica that turned
    read-only in a failover, a failing disk, no permission), not for the command itself: the
    store is unavailable until that changes, however the command is written."""
    return isinstance(exc, _REFUSALS) or str(exc).startswith(_REFUSAL_PREFIXES)


def shown_url(url: str) -> str:
    """``url`` as errors and logs may show it: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:" if parts.username else ":"
    return urlunsplit(parts._replace(netloc=f"{user}***@{netloc}"))


@contextlib.contextmanager
def _guard(url: str) -> Iterator[None]:
    """Redis failures as :class:`RunStoreUnavailable`. ``url`` is the one to show (no password)."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise RunStoreUnavailable(f"Redis at {url} is unreachable: {exc}", url=url) from exc
    except ResponseError as exc:
        if not _refused(exc):
            raise
        cause = exc.__context__ if isinstance(exc, ExecAbortError) and exc.__context__ is not None else exc
        raise RunStoreUnavailable(f"Redis at {url} refused the command: {cause}", url=url) from exc


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


class RedisRunStore:
    """Run store on a Redis server.

    Args:
        settings: ``[runs]`` settings (``redis_url``, ``redis_prefix``, ``ttl_s``).
        kb_path: Unused (accepted so every store is built the same way).
    """

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
        # The store's Lua scripts on the command client (redis-py loads one again when Redis has
        # lost it, after a restart): _APPEND_SCRIPT, _UPDATE_SCRIPT, _ADD_MESSAGES_SCRIPT,
        # _CREATE_RUN_SCRIPT.
        self._append_script: Any = None
        self._create_run_script: Any = None
        self._update_script: Any = None
        self._add_messages_script: Any = None

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
            with _guard(self.url):
                await client.ping()
        except RunStoreUnavailable:
            await client.aclose()
            await pool.disconnect()
            raise
        self._r = client
        self._append_script = client.register_script(_APPEND_SCRIPT)
        self._update_script = client.register_script(_UPDATE_SCRIPT)
        self._add_messages_script = client.register_script(_ADD_MESSAGES_SCRIPT)
        self._create_run_script = client.register_script(_CREATE_RUN_SCRIPT)
        self._blocking = aioredis.Redis.from_url(self.settings.redis_url, max_connections=100_000, **options)

    async def close(self) -> None:
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
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
        if self._create_run_script is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
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
        with _guard(self.url):
            return await self._create_run_script(args=args)

    async def update_run(self, run_id: str, **fields: Any) -> None:
        await self.update_runs([(run_id, fields)])

    async def update_runs(self, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Set fields of several runs' records in one script call: each field goes in a hash
        field of its own, read back over the record (:func:`_record_from`), so a record is not
        fetched, parsed and written back whole for every change of status."""
        for _, fields in updates:
            check_record_fields(fields)
        if self._update_script is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        p = self.p
        args: list[Any] = [f"{p}inflight", self.ttl]
        for run_id, fields in updates:
            pairs: list[Any] = []
            for name, value in fields.items():
                pairs += (_FIELD + name, json.dumps(value, ensure_ascii=False))
                if name in _PLAIN_FIELDS:  # also kept plain: read without the record
                    pairs += (name, value)
            if pairs:
                args += (f"{p}run:{run_id}", run_id, f"{p}events:{run_id}", len(pairs) // 2, *pairs)
        if len(args) > 2:
            with _guard(self.url):
                await self._update_script(args=args)

    async def get_run(self, run_id: str) -> RunRecord | None:
        with _guard(self.url):
            fields = await self.r.hgetall(f"{self.p}run:{run_id}")
        return _record_from(fields)

    async def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        with _guard(self.url):
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
        with _guard(self.url):
            ids = sorted(await self.r.smembers(f"{self.p}inflight"))
            pipe = self.r.pipeline(transaction=False)  # one round trip, not one per run
            for run_id in ids:
                pipe.hgetall(f"{self.p}run:{run_id}")
            rows = await pipe.execute()
        records = [
            _record_from(row) for row in rows if exclude_instance is None or row.get("instance") != exclude_instance
        ]
        return [r for r in records if r is not None and not r.finished]

    # -- events -----------------------------------------------------------------------------
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
                if isinstance(result, ResponseError) and _refused(result):
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
        if self._append_script is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        results: list[Any] = []
        for start in range(0, len(entries), _APPEND_CHUNK):
            args = [part for entry in entries[start : start + _APPEND_CHUNK] for part in entry]
            with _guard(self.url):
                results += await self._append_script(args=args)
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
            if isinstance(result, ResponseError) and _refused(result):
                raise RunStoreUnavailable(f"Redis at {self.url} refused the command: {result}", url=self.url)
            if isinstance(result, ResponseError):
                out.append(ValueError(f"run {run_id} already has an entry at or after seq {seq}: {result}"))
            elif isinstance(result, Exception):
                raise RunStoreUnavailable(f"Redis at {self.url} failed: {result}", url=self.url)
            else:
                out.append(None)
        return out

    async def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        with _guard(self.url):
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
            with _guard(self.url):
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

    # -- stop requests and liveness ------------------------------------------------------------
    async def request_stop(self, run_id: str) -> None:
        with _guard(self.url):
            await self.r.set(f"{self.p}stop:{run_id}", "1", ex=self.ttl)
            await self.r.publish(f"{self.p}stops", run_id)

    async def stop_requests(self, instance: str) -> AsyncIterator[str]:
        pubsub = self.rb.pubsub(ignore_subscribe_messages=True)
        try:
            with _guard(self.url):
                await pubsub.subscribe(f"{self.p}stops")
            while True:
                with _guard(self.url):
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
        with _guard(self.url):
            values = await self.r.mget([f"{self.p}stop:{run_id}" for run_id in run_ids])
        return {run_id for run_id, value in zip(run_ids, values, strict=True) if value is not None}

    async def heartbeat(self, instance: str) -> None:
        with _guard(self.url):
            await self.r.set(f"{self.p}instance:{instance}", str(time.time()), ex=_HEARTBEAT_TTL_S)

    async def instance_alive(self, instance: str) -> bool:
        local = instance_alive(instance)
        if local is not None:
            return local
        with _guard(self.url):
            return bool(await self.r.exists(f"{self.p}instance:{instance}"))

    # -- conversations and feedback ---------------------------------------------------------------
    async def create_conversation(self, record: ConversationRecord) -> None:
        head = record.model_dump_json(exclude={"messages"})
        with _guard(self.url):
            pipe = self.r.pipeline(transaction=True)
            pipe.set(f"{self.p}conv:{record.conversation_id}", head, ex=self.ttl)
            self._index_conversation(pipe, record.tenant, record.conversation_id, record.updated_at)
            await pipe.execute()

    def _index_conversation(self, pipe: Any, tenant: str, conversation_id: str, updated_at: float) -> None:
        """Put the conversation in its tenant's index, which lets go of the conversations that
        expired (each lives ``ttl_s`` after its last update): the index stays as large as what it lists."""
        pipe.zadd(f"{self.p}convs:{tenant}", {conversation_id: updated_at})
        pipe.zremrangebyscore(f"{self.p}convs:{tenant}", "-inf", f"({updated_at - self.ttl}")

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        with _guard(self.url):
            head = await self.r.get(f"{self.p}conv:{conversation_id}")
            if head is None:
                return None
            msgs = await self.r.lrange(f"{self.p}conv:{conversation_id}:messages", 0, -1)
        record = ConversationRecord.model_validate_json(head)
        record.messages = [json.loads(m) for m in msgs]
        return record

    async def list_conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]:
        with _guard(self.url):
            ids = await self.r.zrevrange(f"{self.p}convs:{tenant}", 0, limit - 1)
            pipe = self.r.pipeline(transaction=False)
            for conv_id in ids:
                pipe.get(f"{self.p}conv:{conv_id}")
            heads = await pipe.execute()
        return [ConversationRecord.model_validate_json(h) for h in heads if h]

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        if self._add_messages_script is None:
            raise RunStoreUnavailable(f"the Redis run store ({self.url}) is not open")
        key = f"{self.p}conv:{conversation_id}"
        now = time.time()
        args = [key, f"{key}:messages", self.ttl, repr(now), conversation_id, f"{self.p}convs:", f"({now - self.ttl}"]
        args += [json.dumps(m, ensure_ascii=False) for m in messages]
        with _guard(self.url):
            await self._add_messages_script(args=args)

    def _append(self, pipe: Any, key: str, record: ConversationRecord, messages: list[dict[str, Any]]) -> None:
        """Queue on ``pipe`` (a transaction) the writes adding ``messages`` to the conversation."""
        record.updated_at = time.time()
        pipe.rpush(f"{key}:messages", *[json.dumps(m, ensure_ascii=False) for m in messages])
        pipe.set(key, record.model_dump_json(exclude={"messages"}), ex=self.ttl)
        pipe.expire(f"{key}:messages", self.ttl)
        self._index_conversation(pipe, record.tenant, record.conversation_id, record.updated_at)

    async def add_turn(self, conversation_id: str, run_id: str, messages: list[dict[str, Any]]) -> bool:
        key = f"{self.p}conv:{conversation_id}"
        claim = f"{self.p}turn:{run_id}"
        with _guard(self.url):
            async with self.r.pipeline(transaction=True) as pipe:
                # The first instance to claim the run's turn adds it, in the same transaction: a claim is
                # never left without its turn. Another instance claiming meanwhile aborts this one.
                await pipe.watch(claim)
                head = await pipe.get(key)
                if head is None or await pipe.exists(claim):
                    return False
                history = await pipe.lrange(f"{key}:messages", 0, -1)
                if any(json.loads(m).get("run_id") == run_id for m in history):
                    return False
                pipe.multi()
                pipe.set(claim, "1", ex=self.ttl)  # lives as long as the run's data
                self._append(pipe, key, ConversationRecord.model_validate_json(head), messages)
                try:
                    await pipe.execute()
                except WatchError:
                    return False
        return True

    async def delete_conversation(self, conversation_id: str) -> bool:
        key = f"{self.p}conv:{conversation_id}"
        with _guard(self.url):
            head = await self.r.get(key)
            if head is None:
                return False
            tenant = ConversationRecord.model_validate_json(head).tenant
            pipe = self.r.pipeline(transaction=True)
            pipe.delete(key, f"{key}:messages")
            pipe.zrem(f"{self.p}convs:{tenant}", conversation_id)
            await pipe.execute()
        return True

    async def add_feedback(self, feedback: dict[str, Any]) -> None:
        with _guard(self.url):
            # Kept ttl_s like runs and conversations: entries older than that are let go as new ones come.
            oldest = f"{int((time.time() - self.ttl) * 1000)}-0"
            await self.r.xadd(
                f"{self.p}feedback", {"f": json.dumps(feedback, ensure_ascii=False)}, minid=oldest, approximate=False
            )
