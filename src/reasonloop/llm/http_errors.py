"""What the HTTP providers share at their edge: API keys, status codes and transport errors.

Each provider module has one small function that maps its SDK's exceptions to
:mod:`reasonloop.errors`; the pieces they have in common live here so that every vendor
classifies a 429, a 401 or a dropped connection the same way.
"""

from __future__ import annotations

import email.utils
import importlib
import random
import re
import time
from collections.abc import Mapping
from functools import cache
from typing import Any

from reasonloop.config import LLMSettings, secret
from reasonloop.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMError,
    LLMNotConfigured,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMToolSchemaRejected,
    LLMUnreachable,
)

__all__ = [
    "KEYLESS",
    "api_key",
    "backoff_delay",
    "connection_error",
    "describe",
    "error_for_status",
    "incomplete_stream",
    "parse_retry_after",
    "transport_error",
]

KEYLESS = "no-key"
"""Placeholder key for servers that need none: the SDKs refuse to start without a key."""

# A 400 whose message names one of these is the provider refusing our tool definitions.
_TOOL_SCHEMA_HINT = re.compile(r"tool|schema|function|parameters", re.IGNORECASE)


def api_key(settings: LLMSettings, provider: str, default_env: str | None) -> str | None:
    """The API key for ``settings``, or ``None`` for a server that needs none.

    A variable named in ``api_key_env`` must be set. Without one, the vendor's own endpoint
    (no ``base_url``) needs ``default_env``; a custom ``base_url`` (a local server, a proxy)
    is called without a key, so a vendor key is never sent to a third-party endpoint.

    Raises:
        LLMNotConfigured: the variable that should hold the key is unset; the message names it.
    """
    env = settings.api_key_env or (None if settings.base_url else default_env)
    if not env:
        return None
    key = secret(env)
    if key is None:
        raise LLMNotConfigured(
            f"{provider}: the API key variable {env} is not set; export it or set [llm] api_key_env",
            provider=provider,
            variable=env,
        )
    return key


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, error: LLMError, *, base_s: float = 0.5, max_s: float = 20.0) -> float:
    """Seconds to wait before retry number ``attempt`` (1 first): exponential with jitter, at least
    what a rate limit's ``Retry-After`` asks (up to a minute)."""
    delay = min(max_s, base_s * 2 ** (attempt - 1))
    delay *= 0.5 + random.random() / 2  # jitter so many clients do not retry in step
    if isinstance(error, LLMRateLimited) and error.retry_after is not None:
        delay = max(delay, min(error.retry_after, 60.0))
    return delay


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    headers: Mapping[str, str] | None = None,
) -> LLMError:
    """Our error for an HTTP error status (the caller raises it ``from`` the SDK's exception)."""
    text = f"{provider}: HTTP {status}: {message}".strip()
    if status == 429:
        return LLMRateLimited(text, status_code=status, retry_after=parse_retry_after(headers), provider=provider)
    if status in (401, 403):
        return LLMAuthError(text + " (check the API key and [llm] api_key_env)", status_code=status, provider=provider)
    if status >= 500:
        return LLMServerError(text, status_code=status, provider=provider)
    if status == 408:  # the server gave up waiting on the request: worth another try
        return LLMTimeout(text, status_code=status, provider=provider)
    if status == 400 and _TOOL_SCHEMA_HINT.search(message):
        return LLMToolSchemaRejected(text, status_code=status, provider=provider)
    if 400 <= status < 500:
        return LLMBadRequest(text, status_code=status, provider=provider)
    return LLMBadResponse(text, status_code=status, provider=provider)


@cache
def _transport_classes() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """``(timeouts, transport errors)`` of httpx and httpx2, whichever the SDKs use."""
    timeouts: list[type[BaseException]] = []
    transport: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - depends on the installed SDK versions
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def transport_error(exc: BaseException, *, provider: str, streaming: bool) -> LLMError | None:
    """Our error for an httpx/httpx2 transport failure, or ``None`` if ``exc`` is not one.

    Before the response started (``streaming=False``) a failure means the server is
    unreachable; once it streams, a broken connection is a cut-off response.
    """
    timeouts, transport = _transport_classes()
    if isinstance(exc, timeouts):
        return LLMTimeout(f"{provider}: the server did not answer in time ({type(exc).__name__})", provider=provider)
    if isinstance(exc, transport):
        return connection_error(exc, provider=provider, streaming=streaming)
    return None


def connection_error(exc: BaseException, *, provider: str, streaming: bool) -> LLMError:
    """A lost or refused connection: unreachable before the response, cut-off stream after."""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if streaming:
        return LLMBadResponse(f"{provider}: the response stream was cut off ({detail})", provider=provider)
    return LLMUnreachable(f"{provider}: cannot reach the server ({detail})", provider=provider)


def incomplete_stream(provider: str, what: str) -> LLMBadResponse:
    """The stream ended cleanly but without the event that closes a response."""
    return LLMBadResponse(f"{provider}: the response stream ended before {what}", provider=provider)


def describe(value: Any, limit: int = 200) -> str:
    """A short printable form of a malformed payload for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
