"""API keys as the configuration holds them, and the warning for a server reachable without any.

Keys live in the config only as SHA-256 digests (``printf %s "$KEY" | sha256sum``); a caller
presents the key itself, and :class:`~reasonloop.server.gate.Gate` checks it and scopes the call to
the key's tenant. With no keys configured, every caller is the ``default`` tenant; that is meant
for a server bound to loopback (:func:`auth_warning` says when it is not).
"""

from __future__ import annotations

import hashlib
import ipaddress

from reasonloop.config import ServerSettings

__all__ = ["WS_SUBPROTOCOL", "auth_warning", "hash_key", "is_loopback"]

WS_SUBPROTOCOL = "reasonloop.v1"
"""The WebSocket subprotocol the server selects when a client offers it."""


def hash_key(key: str) -> str:
    """The SHA-256 hex digest under which ``key`` is configured."""
    return hashlib.sha256(key.encode()).hexdigest()


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
