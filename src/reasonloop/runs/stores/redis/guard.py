"""Redis failures as :class:`~reasonloop.errors.RunStoreUnavailable`, and URLs shown without passwords."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    ExecAbortError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError

from reasonloop.errors import RunStoreUnavailable

__all__ = ["guard", "refused", "shown_url"]


_REFUSALS = (OutOfMemoryError, ReadOnlyError, ExecAbortError, NoPermissionError)
_REFUSAL_PREFIXES = ("MISCONF", "MASTERDOWN", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "LOADING")


def refused(exc: ResponseError) -> bool:
    """Whether Redis refused a command for its own state (memory full, a replica that turned
    read-only in a failover, a failing disk, no permission), not for the command itself: the
    store is unavailable until that changes, however the command is written."""
    return isinstance(exc, _REFUSALS) or str(exc).startswith(_REFUSAL_PREFIXES)


def shown_url(url: str) -> str:
    """``url`` as errors and logs may show it: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:" if parts.username else ":"
    return urlunsplit(parts._replace(netloc=f"{user}***@{netloc}"))


@contextlib.contextmanager
def guard(url: str) -> Iterator[None]:
    """Redis failures as :class:`RunStoreUnavailable`. ``url`` is the one to show (no password)."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise RunStoreUnavailable(f"Redis at {url} is unreachable: {exc}", url=url) from exc
    except ResponseError as exc:
        if not refused(exc):
            raise
        cause = exc.__context__ if isinstance(exc, ExecAbortError) and exc.__context__ is not None else exc
        raise RunStoreUnavailable(f"Redis at {url} refused the command: {cause}", url=url) from exc
