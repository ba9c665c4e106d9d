"""The ``[server]`` section of the configuration: the HTTP/WebSocket server, its API keys (stored as
digests) and what it accepts from clients. Re-exported by :mod:`reasonloop.config`, which most code
imports them from."""

from __future__ import annotations

from pydantic import Field

from reasonloop.config.tools import Section

__all__ = ["APIKeySettings", "ServerSettings"]


class APIKeySettings(Section):
    """One API key, stored as its SHA-256 hex digest (``reasonloop serve`` never sees the key itself)."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tenant: str = "default"
    """Documents, conversations and runs are scoped to this tenant."""
    name: str = ""
    principal: str = ""
    """The user this key is, within its tenant: it reads the documents open to everyone and those
    whose readers name it (``alice`` or ``user:alice``) or one of its :attr:`groups`. Empty: a key
    that is no one in particular, which reads only the documents open to everyone and those of
    its groups."""
    groups: list[str] = Field(default_factory=list)
    """Groups the key's principal is in (``finance`` or ``group:finance``)."""
    reads_all: bool = False
    """Reads every document of its tenant whatever its readers (an administrator's key)."""
    rate_per_minute: float | None = Field(default=None, gt=0)
    """Requests per minute for this key; ``None`` uses ``[server] rate_per_minute``."""
    burst: int | None = Field(default=None, ge=1)


class ServerSettings(Section):
    """The HTTP/WebSocket server."""

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default=1, ge=1)
    api_keys: list[APIKeySettings] = Field(default_factory=list)
    """With no keys, auth is off (meant for loopback; a warning is logged otherwise)."""
    rate_per_minute: float | None = Field(default=None, gt=0)
    """Default per-key request rate; ``None`` means unlimited."""
    burst: int = Field(default=20, ge=1)
    """Requests a key may make at once before the rate applies."""
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    max_question_chars: int = Field(default=32_000, ge=1)
    """Longest question a run may be asked over HTTP, WebSocket, MCP or the OpenAI-compatible route,
    and longest search query (about 8,000 tokens); a longer one is refused with ``request.invalid``
    before any work starts (embedding megabytes for a search alone keeps a core busy for minutes)."""
    ws_max_frame_bytes: int = Field(default=64 * 1024, ge=64)
    """Largest WebSocket frame accepted from a client; larger ones are refused."""
    ws_ping_interval_s: float = Field(default=20.0, gt=0)
    ws_ping_timeout_s: float = Field(default=20.0, gt=0)
    """A socket that does not answer a protocol ping within this time is closed."""
    ws_compression: bool = False
    """Offer permessage-deflate. Event frames are small JSON; compressing each one costs more CPU
    than it saves bandwidth on most links (and a compressed frame takes uvicorn's slower path, not
    the protocol's direct write), so it is off unless clients are on slow networks."""
    cors_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names, besides loopback ones, that a server on loopback without API keys answers to
    (a proxy on the same machine that keeps the client's ``Host``). Any other ``Host`` is refused:
    a web page whose name was re-pointed at 127.0.0.1 (DNS rebinding) could otherwise read and use
    the server as if it were its own site."""
    chat_stop_on_disconnect: bool = True
    """Stop the run of a ``/v1/chat/completions`` request (streamed or not) when its client goes
    away before the end, as an OpenAI client that stops reading or gives up waiting expects (the
    partial answer is kept, status ``stopped``).
    Off: the run goes on, and its result stays readable at ``/v1/runs/{id}`` (``X-Run-Id``)."""
