"""Who may call: one gate for every surface (HTTP routes, the WebSocket, MCP over HTTP).

A call is admitted in three steps; each refuses with the same error, code and HTTP status on
every surface:

1. **Its site**, while no API keys are configured (see :mod:`reasonloop.server.cross_site`): a
   ``Host`` that is not this server's (DNS rebinding), or a web page of another site that writes
   or opens a socket, is refused with ``auth.cross_site`` (403). With keys, the key decides.
2. **Its key** (``Authorization: Bearer KEY``; a WebSocket may also carry it as the ``api_key``
   query parameter or a ``bearer.KEY`` subprotocol, as browsers cannot set its headers): missing
   or unknown, ``auth.invalid_key`` (401). The key names the :class:`Caller`'s tenant, to which
   everything the call reads or creates is scoped: another tenant's run, conversation or document
   is not found, as one that does not exist. Without keys every caller is the ``default`` tenant.
   The key also names its principal and groups (:class:`~reasonloop.kb.access.Reader`): every
   knowledge-base read of the call, a run's searches included, sees only what they may read.
3. **Its rate** (:mod:`reasonloop.server.rate_limit`): over the key's budget, ``auth.rate_limited``
   (429, with ``retry_after``).

Where each surface asks:

* HTTP: the site of every request, routes that need no key included (web UI, docs, health), in
  :class:`~reasonloop.server.middleware.SiteGuard`; key and rate in each route's dependency
  (:func:`reasonloop.server.deps.principal`).
* WebSocket: all three once, before the socket is accepted; a refusal is the handshake's HTTP
  answer, the same JSON error as over HTTP. Each ``ask`` takes from the rate again.
* MCP over HTTP: all three for every request, before the MCP SDK sees it.

Example::

    gate = Gate(settings.server)
    caller = await gate.admit(scope)     # raises one of REFUSALS: AuthError, CrossSiteRefused, RateLimited
    await gate.charge(caller)            # one more request of the same caller (a WebSocket ask)
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from reasonloop.config import ServerSettings
from reasonloop.errors import AuthError, RateLimited, ReasonLoopError
from reasonloop.kb.access import EVERYONE, Reader
from reasonloop.server.auth import hash_key
from reasonloop.server.cross_site import check_host, check_origin, guarded_hosts
from reasonloop.server.rate_limit import RateLimits

__all__ = ["ADMITTED", "LOCAL", "REFUSALS", "Caller", "Gate", "decider", "presented_key"]

REFUSALS: tuple[type[ReasonLoopError], ...] = (AuthError, RateLimited)
"""What the gate refuses a call with (:class:`~reasonloop.errors.CrossSiteRefused` is an AuthError):
``except REFUSALS``."""

ADMITTED = "reasonloop.caller"
"""The ASGI scope key under which a surface hands the admitted :class:`Caller` to what serves the
call (the MCP endpoint to its tools)."""

_READS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods whose answers CORS keeps from other sites' pages: their origin is not checked."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the tenant everything is scoped to, which key (``None`` without keys), and
    the reader its key is (which of the tenant's documents it may read; every one without keys)."""

    tenant: str = "default"
    key_name: str | None = None
    key_hash: str | None = None
    reader: Reader = EVERYONE

    def run_fields(self) -> dict[str, Any]:
        """What a run asked by this caller carries of it: its tenant, and the reader its
        knowledge-base reads are made for."""
        return {"tenant": self.tenant, "reader": self.reader.to_dict()}


def decider(caller: Caller, via: str) -> dict[str, Any]:
    """Who answers an approval, as its audit records it: the key's name, the tenant, the
    principal the key names (when keys name one) and the surface."""
    return {
        "key": caller.key_name,
        "tenant": caller.tenant,
        "principal": caller.reader.principal,
        "via": via,
    }


LOCAL = Caller()
"""The caller without keys (and over stdio): the ``default`` tenant."""


def presented_key(scope: Mapping[str, Any]) -> str | None:
    """The key a call presents, read from its ASGI scope: the ``Authorization`` header's bearer
    token (the first such header); for a WebSocket, first the ``api_key`` query parameter (the
    last one, if repeated) and then a ``bearer.KEY`` subprotocol. Read from the raw scope, as a
    request object would read it, without building one."""
    if scope["type"] == "websocket":
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
            scheme, _, token = value.decode("latin-1").partition(" ")
            return (token.strip() or None) if scheme.lower() == "bearer" else None
    return None


class Gate:
    """Decides who may call, for every surface (see the module's docstring).

    Args:
        settings: ``[server]`` settings: ``api_keys``, ``rate_per_minute`` and ``burst``,
            ``cors_origins``, ``host`` and ``allowed_hosts``.
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.keys = {k.sha256: k for k in settings.api_keys}
        self.rates = RateLimits(settings, self.keys)
        self.allowed_origins = frozenset(settings.cors_origins)
        self.allowed_hosts = guarded_hosts(settings.host, settings.allowed_hosts)
        """Host names besides loopback ones a call may name while there are no keys (None: any)."""

    @property
    def enabled(self) -> bool:
        """Whether keys are configured (with none, every caller is :data:`LOCAL`)."""
        return bool(self.keys)

    async def admit(self, scope: Mapping[str, Any]) -> Caller:
        """Admit a call (an HTTP request or a WebSocket handshake): its site, its key, its rate.

        Raises:
            CrossSiteRefused: no keys are configured and the call comes from another site.
            AuthError: keys are configured and the call presents none of them.
            RateLimited: the caller is over its budget.
        """
        self.check_site(scope)
        caller = self.identify(scope)
        await self.rates.take(caller.key_hash)
        return caller

    def check_site(self, scope: Mapping[str, Any]) -> None:
        """Refuse a call of another site while no keys are configured: any call whose ``Host``
        is not this server's, and a WebSocket or a write whose ``Origin`` is another site.

        Raises:
            CrossSiteRefused: it is such a call.
        """
        if self.keys:  # with keys, the key decides: a page of another site has none
            return
        check_host(scope, self.allowed_hosts)
        if scope["type"] == "websocket" or scope.get("method") not in _READS:
            check_origin(scope, self.allowed_origins)

    def identify(self, scope: Mapping[str, Any]) -> Caller:
        """The caller whose key the call presents (:data:`LOCAL` without keys).

        Raises:
            AuthError: keys are configured and it presents none, or an unknown one.
        """
        if not self.keys:
            return LOCAL
        token = presented_key(scope)
        if not token:
            raise AuthError("an API key is required: send 'Authorization: Bearer <key>'")
        digest = hash_key(token)
        for known, entry in self.keys.items():  # compared in constant time: no timing tells a digest's prefix
            if hmac.compare_digest(known, digest):
                reader = EVERYONE if entry.reads_all else Reader.of(entry.principal, entry.groups)
                return Caller(tenant=entry.tenant, key_name=entry.name or known[:8], key_hash=known, reader=reader)
        raise AuthError("unknown API key")

    async def charge(self, caller: Caller) -> None:
        """Take one more request from an admitted caller's budget (a WebSocket's ``ask``).

        Raises:
            RateLimited: the caller is over its budget.
        """
        await self.rates.take(caller.key_hash)
