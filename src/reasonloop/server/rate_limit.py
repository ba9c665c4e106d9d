"""Rate-limit buckets every server instance shares, kept in Redis beside the run store.

Each key's bucket is a Redis hash (``{prefix}rate:{key}``: tokens left and when they were
counted) that one Lua script refills and takes from atomically, on the Redis server's clock, so
instances on different machines draw from the same budget and never disagree about the time.
A bucket left alone expires once it would be full again. Used by
:class:`~reasonloop.server.auth.Authenticator` when the run store is Redis; without it each
server process counts on its own.
"""

from __future__ import annotations

import logging
import math

import redis.asyncio as aioredis
from redis.exceptions import RedisError

__all__ = ["RedisTokenBuckets"]

log = logging.getLogger(__name__)

_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local saved = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(saved[1]), tonumber(saved[2])
if tokens == nil or at == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""
"""Refill the bucket for the time since it was last counted, take a token if there is one, and
return the seconds until there is (as a string: Lua numbers reach the client as integers)."""


class RedisTokenBuckets:
    """Token buckets in Redis: ``await take(key, rate, burst)`` as :meth:`TokenBucket.take`.

    Args:
        client: The run store's client.
        prefix: The run store's key prefix (``[runs] redis_prefix``).
    """

    def __init__(self, client: aioredis.Redis, prefix: str) -> None:
        self.prefix = prefix
        self._script = client.register_script(_TAKE)
        self._failing = False

    async def take(self, key: str, rate: float, burst: int) -> float | None:
        """Take one token from ``key``'s bucket (``rate`` tokens a second, at most ``burst``).

        Returns:
            0 when taken, else the seconds until a token is there; None when Redis did not
            answer (the caller counts on its own meanwhile: a limit is not worth refusing
            every request for).
        """
        try:
            wait = float(await self._script(keys=[f"{self.prefix}rate:{key}"], args=[repr(rate), burst]))
        except (RedisError, OSError, ValueError) as exc:
            if not self._failing:  # said once, not per request
                log.warning(
                    "shared rate limits unavailable, each process counts on its own until Redis answers: %s", exc
                )
            self._failing = True
            return None
        if self._failing:
            log.info("shared rate limits are back")
            self._failing = False
        return wait if math.isfinite(wait) and wait > 0 else 0.0
