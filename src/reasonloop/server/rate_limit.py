"""Rate limits per API key: token buckets, shared by every server instance when the run store can.

Each key has ``rate_per_minute`` requests a minute and at most ``burst`` at once (its own
settings, else ``[server]``'s). Where the run store keeps rate buckets (Redis: see
:class:`~reasonloop.runs.stores.protocol.StoreFeatures`), every instance draws from the same
budget; while that store does not answer, each process counts on its own (a limit is not worth
refusing every request for), and says so once.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from reasonloop.config import APIKeySettings, ServerSettings
from reasonloop.errors import RateLimited, RunStoreUnavailable

__all__ = ["RateLimits", "SharedBuckets", "TokenBucket"]

log = logging.getLogger(__name__)

SharedBuckets = Callable[[str, float, int], Awaitable[float]]
"""``await take(key, rate, burst)``: the seconds until a token of a shared bucket is there (0:
taken); raises :class:`~reasonloop.errors.RunStoreUnavailable` when it cannot say."""


@dataclass
class TokenBucket:
    """``rate`` tokens per second refilled up to ``burst``; one request takes one token."""

    rate: float
    burst: int
    tokens: float = -1.0
    updated: float = field(default_factory=time.monotonic)

    def take(self, now: float | None = None) -> float:
        """Take a token; returns 0 on success, else the seconds until one is available."""
        now = time.monotonic() if now is None else now
        if self.tokens < 0:
            self.tokens = float(self.burst)
        self.tokens = min(float(self.burst), self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimits:
    """Each key's budget.

    Args:
        settings: ``[server]`` settings (``rate_per_minute``, ``burst``: the defaults).
        keys: The configured keys by digest (their own ``rate_per_minute`` and ``burst``).
    """

    def __init__(self, settings: ServerSettings, keys: Mapping[str, APIKeySettings]) -> None:
        self.settings = settings
        self.keys = keys
        self._buckets: dict[str, TokenBucket] = {}
        self._failing = False
        self.shared: SharedBuckets | None = None
        """The buckets every instance shares (set by the app from its run manager); None: this
        process counts on its own."""

    async def take(self, key_hash: str | None) -> None:
        """Take one request from the budget of the key with digest ``key_hash`` (None: no key).

        Raises:
            RateLimited: over the limit; ``retry_after`` says when to come back (whole seconds).
        """
        entry = self.keys.get(key_hash or "")
        per_minute = (entry.rate_per_minute if entry else None) or self.settings.rate_per_minute
        if per_minute is None:
            return
        burst = (entry.burst if entry else None) or self.settings.burst
        key = key_hash or "anonymous"
        wait = None if self.shared is None else await self._take_shared(key, per_minute / 60.0, burst)
        if wait is None:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(rate=per_minute / 60.0, burst=burst)
            wait = bucket.take()
        if wait > 0:
            retry_after = max(1, math.ceil(wait))
            raise RateLimited(f"rate limit of {per_minute:g} requests per minute exceeded", retry_after=retry_after)

    async def _take_shared(self, key: str, rate: float, burst: int) -> float | None:
        """The shared bucket's answer, None while it gives none."""
        assert self.shared is not None
        try:
            wait = await self.shared(key, rate, burst)
        except RunStoreUnavailable as exc:
            if not self._failing:  # said once, not per request
                log.warning(
                    "shared rate limits unavailable, each process counts on its own until the run store answers: %s",
                    exc.message,
                )
            self._failing = True
            return None
        if self._failing:
            log.info("shared rate limits are back")
            self._failing = False
        return wait
