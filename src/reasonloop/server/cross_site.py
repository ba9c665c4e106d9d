"""Refusing web pages of other sites while authentication is off.

With no API keys, anything that can reach the server may use it: meant for a server on
loopback, used by programs on the same machine. A web page the user happens to visit is not
such a program, yet the browser lets it reach ``127.0.0.1``: it can open a WebSocket (CORS does
not apply to WebSockets) and send form posts, which need no preflight, and so ask questions over
the user's documents or add documents of its own. Browsers name the page's site in the
``Origin`` header of those requests, so with auth off a request whose ``Origin`` is another
site is refused (403). Allowed are requests without an ``Origin`` (not from a page), pages of the
server itself (the ``Origin`` is the ``Host`` asked for), pages served from loopback (a front-end
in development), and the sites of ``[server] cors_origins``. Reads are left to CORS, which keeps
their answers from other sites' pages. With keys configured, the key decides: a page of another
site has no key unless the user gave it one.

A page can also pose as the server's own: its site's name, re-pointed at ``127.0.0.1`` after the
page loaded (DNS rebinding), makes its requests same-site for the browser, reads included. Such
requests still name the page's site in ``Host``, so a server on loopback without keys answers only
requests whose ``Host`` is a loopback name or address, or one of ``[server] allowed_hosts``
(:func:`check_host`), reads and WebSockets too.

These are the rules; :meth:`reasonloop.server.gate.Gate.check_site` applies them to every surface.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any
from urllib.parse import urlsplit

from reasonloop.errors import CrossSiteRefused
from reasonloop.server.auth import is_loopback

__all__ = ["check_host", "check_origin", "guarded_hosts"]


def check_origin(scope: Any, allowed: Iterable[str]) -> None:
    """Refuse a request (HTTP or WebSocket) from a page of another site.

    Raises:
        CrossSiteRefused: its ``Origin`` is neither this server, loopback nor one of ``allowed``.
    """
    origin = host = None
    for name, value in scope.get("headers") or ():
        if name == b"origin":
            origin = value.decode("latin-1")
        elif name == b"host":
            host = value.decode("latin-1")
    if origin is None or origin in allowed:
        return
    parts = urlsplit(origin)
    try:
        hostname = parts.hostname
    except ValueError:  # an Origin that is no URL
        hostname = None
    if hostname is not None and (parts.netloc == host or is_loopback(hostname)):
        return
    raise CrossSiteRefused(
        f"a page of {origin} may not use this server: with authentication off only its own pages, "
        "pages on loopback and [server] cors_origins may",
        origin=origin,
    )


def check_host(scope: Any, allowed_hosts: Collection[str] | None) -> None:
    """Refuse a request whose ``Host`` names neither loopback nor one of ``allowed_hosts``
    (``None``: any host, for a server that is not on loopback). A request without ``Host`` is
    not from a browser and passes.

    Raises:
        CrossSiteRefused: the host is another name (the signature of DNS rebinding).
    """
    if allowed_hosts is None:
        return
    for name, value in scope.get("headers") or ():
        if name == b"host":  # every one of them, should a client send several
            host = value.decode("latin-1")
            try:
                hostname = urlsplit(f"//{host}").hostname
            except ValueError:  # a Host that is no host
                hostname = None
            if hostname is None or not (is_loopback(hostname) or hostname.lower() in allowed_hosts):
                raise CrossSiteRefused(
                    f"this server answers on loopback names only, not {host!r}: with authentication off, "
                    "add a name a local proxy uses to [server] allowed_hosts",
                    host=host,
                )


def guarded_hosts(host: str, allowed_hosts: Iterable[str]) -> frozenset[str] | None:
    """The host names besides loopback ones a server bound to ``host`` answers to without keys:
    ``allowed_hosts`` on loopback, None (any) when it is bound to another address, whose users
    were warned that anyone who reaches it may use it."""
    return frozenset(h.lower() for h in allowed_hosts) if is_loopback(host) else None
