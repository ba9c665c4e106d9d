"""API keys, tenants and per-key rate limits.

Keys live in the config only as SHA-256 digests (``printf %s "$KEY" | sha256sum``); a request presents the key itself as ``Authorization: Bearer KEY``
(HTTP) or, for WebSockets, as the ``api_key`` query parameter or a ``bearer.KEY`` subprotocol.
Each key belongs to a tenant; everything a request reads or creates is scoped to it.

With no keys configured, auth is off and every request is the ``default`` tenant; that is
meant for a server bound to loopback (:func:`auth_warning` says when it is not).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from reasonloop.config import APIKeySettings, ServerSettings
from reasonloop.errors import AuthError, RateLimited

__all__ = ["Authenticator", "Principal", "TokenBucket", "auth_warning", "hash_key", "is_loopback"]

WS_SUBPROTOCOL = "reasonloop.v1"
"""The WebSocket subprotocol the server selects when a client offers it."""


def hash_key(key: str) -> str:
    """The SHA-256 hex digest under which ``key`` is configured."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant everything is scoped to, and which key (``None`` with auth off)."""

    tenant: str = "default"
    key_name: str | None = None
    key_hash: str | None = None


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


class Authenticator:
    """Checks keys and rate limits.

    Args:
        settings: ``[server]`` settings (``api_keys``, ``rate_per_minute``, ``burst``).
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.keys: dict[str, APIKeySettings] = {k.sha256: k for k in settings.api_keys}
        self._buckets: dict[str, TokenBucket] = {}
        self.shared: Callable[[str, float, int], Awaitable[float | None]] | None = None
        """Takes a token from a bucket every server instance shares (``take(key, rate, burst)``,
        :class:`~reasonloop.server.rate_limit.RedisTokenBuckets`), None when it cannot; unset,
        each process counts on its own."""

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def authenticate(self, token: str | None) -> Principal:
        """The principal for ``token`` (the raw key).

        Raises:
            AuthError: auth is on and the key is missing or unknown.
        """
        if not self.enabled:
            return Principal()
        if not token:
            raise AuthError("an API key is required: send 'Authorization: Bearer <key>'")
        digest = hash_key(token)
        for known, entry in self.keys.items():
            if hmac.compare_digest(known, digest):
                return Principal(tenant=entry.tenant, key_name=entry.name or known[:8], key_hash=known)
        raise AuthError("unknown API key")

    async def check_rate(self, principal: Principal) -> None:
        """Take one request from the principal's budget (shared by every instance when
        :attr:`shared` is set and answers, else this process's own).

        Raises:
            RateLimited: over the limit; ``retry_after`` says when to come back (whole seconds).
        """
        key = principal.key_hash or "anonymous"
        entry = self.keys.get(principal.key_hash or "")
        per_minute = (entry.rate_per_minute if entry else None) or self.settings.rate_per_minute
        if per_minute is None:
            return
        burst = (entry.burst if entry else None) or self.settings.burst
        wait = None if self.shared is None else await self.shared(key, per_minute / 60.0, burst)
        if wait is None:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(rate=per_minute / 60.0, burst=burst)
            wait = bucket.take()
        if wait > 0:
            retry_after = max(1, math.ceil(wait))
            raise RateLimited(f"rate limit of {per_minute:g} requests per minute exceeded", retry_after=retry_after)

    def from_bearer(self, header: str | None) -> Principal:
        """Authenticate an ``Authorization`` header value."""
        token = None
        if header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() == "bearer":
                token = value.strip()
        return self.authenticate(token)


def ws_token(scope: Mapping[str, Any]) -> str | None:
    """The key a WebSocket client presented, read from its ASGI scope: the ``api_key`` query
    parameter (the last one, if repeated), a ``bearer.KEY`` subprotocol or the
    ``Authorization`` header (the first one). Read from the raw scope, as a request object
    would read it, without building one per connection."""
    query = scope.get("query_string") or b""
    if query:
        key = None
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if name == "api_key":
                key = value
        if key:
            return key
    for proto in scope.get("subprotocols") or ():
        if proto.startswith("bearer."):
            return proto[len("bearer.") :]
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            header = value.decode("latin-1")
            return header[7:].strip() if header.lower().startswith("bearer ") else None
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only; an empty host is every interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def auth_warning(settings: ServerSettings) -> str | None:
    """A warning when the server is reachable from other machines without API keys."""
    if settings.api_keys or is_loopback(settings.host):
        return None
    return (
        f"serving on {settings.host} with authentication OFF: anyone who can reach this address can use the "
        "server; add [[server.api_keys]] (sha256 of each key) to the config"
    )
