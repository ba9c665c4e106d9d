"""The conversations part of the Redis run store: ``conv:{id}`` heads, ``conv:{id}:messages`` lists and
each tenant's ``convs:{tenant}`` index, expiring ``ttl_s`` after their last update."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import WatchError

from reasonloop.runs.models import ConversationRecord
from reasonloop.runs.stores.redis.guard import guard

__all__ = ["RedisConversations"]


class RedisConversations:
    """Conversations in Redis, for :class:`~reasonloop.runs.stores.redis.store.RedisRunStore`, which
    provides the connection (``r``), key prefix (``p``), ``ttl``, shown ``url`` and scripts."""

    r: Any
    p: str
    ttl: int
    url: str
    _add_messages_script: Any
    _run_script: Callable[[Any, list[Any]], Awaitable[Any]]

    async def create_conversation(self, record: ConversationRecord) -> None:
        head = record.model_dump_json(exclude={"messages"})
        with guard(self.url):
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
        with guard(self.url):
            head = await self.r.get(f"{self.p}conv:{conversation_id}")
            if head is None:
                return None
            msgs = await self.r.lrange(f"{self.p}conv:{conversation_id}:messages", 0, -1)
        record = ConversationRecord.model_validate_json(head)
        record.messages = [json.loads(m) for m in msgs]
        return record

    async def list_conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]:
        with guard(self.url):
            ids = await self.r.zrevrange(f"{self.p}convs:{tenant}", 0, limit - 1)
            pipe = self.r.pipeline(transaction=False)
            for conv_id in ids:
                pipe.get(f"{self.p}conv:{conv_id}")
            heads = await pipe.execute()
        return [ConversationRecord.model_validate_json(h) for h in heads if h]

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        key = f"{self.p}conv:{conversation_id}"
        now = time.time()
        args = [key, f"{key}:messages", self.ttl, repr(now), conversation_id, f"{self.p}convs:", f"({now - self.ttl}"]
        args += [json.dumps(m, ensure_ascii=False) for m in messages]
        await self._run_script(self._add_messages_script, args)

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
        with guard(self.url):
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

    async def rename_conversation(self, conversation_id: str, title: str) -> bool:
        key = f"{self.p}conv:{conversation_id}"
        with guard(self.url):
            while True:  # a turn added meanwhile rewrites the head: read it again
                async with self.r.pipeline(transaction=True) as pipe:
                    await pipe.watch(key)
                    head = await pipe.get(key)
                    if head is None:
                        return False
                    record = ConversationRecord.model_validate_json(head)
                    record.title = title
                    pipe.multi()
                    pipe.set(key, record.model_dump_json(exclude={"messages"}), keepttl=True)
                    try:
                        await pipe.execute()
                    except WatchError:
                        continue
                    return True

    async def delete_conversation(self, conversation_id: str) -> bool:
        key = f"{self.p}conv:{conversation_id}"
        with guard(self.url):
            head = await self.r.get(key)
            if head is None:
                return False
            tenant = ConversationRecord.model_validate_json(head).tenant
            pipe = self.r.pipeline(transaction=True)
            pipe.delete(key, f"{key}:messages")
            pipe.zrem(f"{self.p}convs:{tenant}", conversation_id)
            await pipe.execute()
        return True
