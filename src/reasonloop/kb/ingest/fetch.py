"""Fetch http(s) sources for ingestion, with timeouts and a size cap."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from reasonloop.errors import KBLoadError

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_BYTES", "fetch_url", "is_url"]

MAX_BYTES = 25 * 1024 * 1024
"""Default cap on a downloaded document; bigger responses are refused, not truncated."""


def is_url(source: str) -> bool:
    """Whether ``source`` is an http(s) URL rather than a path."""
    return source.startswith(("http://", "https://"))


async def fetch_url(
    url: str,
    *,
    client: httpx.AsyncClient | None = None,
    timeout_s: float = 30.0,
    max_bytes: int = MAX_BYTES,
) -> tuple[bytes, str, str]:
    """Download ``url``.

    Returns:
        ``(body, content_type, suffix)`` where ``suffix`` comes from the URL path (may be empty).

    Raises:
        KBLoadError: connection failure, timeout, HTTP error status, or a body over ``max_bytes``.
    """
    import httpx  # only ingesting a URL needs it, not every user of is_url

    own = client is None
    client = client or httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(timeout_s))
    try:
        async with client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise KBLoadError(f"{url}: HTTP {response.status_code}", source=url, status_code=response.status_code)
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise KBLoadError(f"{url}: {declared} bytes is over the {max_bytes}-byte limit", source=url)
            body = bytearray()
            async for piece in response.aiter_bytes():
                body.extend(piece)
                if len(body) > max_bytes:
                    raise KBLoadError(f"{url}: response is over the {max_bytes}-byte limit", source=url)
            content_type = response.headers.get("content-type", "")
    except httpx.TimeoutException as exc:
        raise KBLoadError(f"{url}: timed out after {timeout_s:g} s", source=url) from exc
    except httpx.HTTPError as exc:
        raise KBLoadError(f"{url}: cannot fetch ({type(exc).__name__}: {exc})", source=url) from exc
    finally:
        if own:
            await client.aclose()
    suffix = PurePosixPath(urlparse(url).path).suffix.lower()
    return bytes(body), content_type, suffix
