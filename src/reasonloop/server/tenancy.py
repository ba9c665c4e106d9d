"""Each tenant's knowledge base: where it lives, opened once and kept while the server runs.

Each tenant has its own knowledge base directory (the ``default`` tenant uses ``[kb] path`` itself,
others ``[kb] path/tenants/<tenant>``), so one tenant never sees another's documents; the gate
(:mod:`reasonloop.server.gate`) says which tenant a call is. Every surface reaches a tenant's
knowledge base through :class:`KBProvider` (``ServerState.kb``).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reasonloop.config import Settings
from reasonloop.errors import KBUnavailable
from reasonloop.kb.access import Reader

__all__ = ["KBProvider", "kb_call", "safe_filename", "tenant_kb_path"]

_MAX_NAME_BYTES = 200
"""Bytes of a stored file's name (file systems allow 255; room is left for a ``-N`` suffix)."""
_MAX_SUFFIX_BYTES = 16


def tenant_kb_path(settings: Settings, tenant: str) -> Path:
    """The knowledge base directory of ``tenant``: its own for every tenant name.

    A name that is a safe file name already is used as it is; any other gets a safe form of
    it and a digest of the whole name (``acme/eu`` and ``eu``, or ``a:b`` and ``a_b``, would
    otherwise share a directory).
    """
    root = Path(settings.kb.path)
    if tenant == "default":
        return root
    name = safe_filename(tenant, fallback="")
    if name != tenant:
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:16]
        name = f"{_fit(name, _MAX_NAME_BYTES - 17)}-{digest}".lstrip("-")
    return root / "tenants" / name


def safe_filename(name: str, fallback: str = "upload") -> str:
    """A file name that cannot leave its directory: no separators, no leading dots, no control characters."""
    name = unicodedata.normalize("NFC", name or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = re.sub(r"[^\w.\- ]", "_", name).strip(" .")
    name = re.sub(r"\.{2,}", ".", name)
    return _fit(name, _MAX_NAME_BYTES) or fallback


def _fit(name: str, limit: int) -> str:
    """``name`` cut to ``limit`` bytes of UTF-8 (whole characters), keeping its extension."""
    if len(name.encode()) <= limit:
        return name
    stem, dot, extension = name.rpartition(".")
    suffix = dot + extension if stem and dot and len(extension.encode()) < _MAX_SUFFIX_BYTES else ""
    stem = stem if suffix else name
    cut = stem.encode()[: limit - len(suffix.encode())].decode("utf-8", errors="ignore").rstrip(" .")
    return cut + suffix if cut else ""


async def kb_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a sync or async knowledge-base method without blocking the event loop."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


class KBProvider:
    """Opens (once) and caches each tenant's knowledge base.

    Args:
        settings: Where knowledge bases live.
        opener: ``path -> KnowledgeBase``; defaults to ``reasonloop.kb.knowledge_base.KnowledgeBase.open``.
    """

    def __init__(self, settings: Settings, opener: Callable[[Path], Any] | None = None) -> None:
        self.settings = settings
        self._opener = opener
        self._open: dict[str, Any] = {}
        self._lock = asyncio.Lock()

    def _default_opener(self) -> Callable[[Path], Any]:
        try:
            from reasonloop.kb.knowledge_base import KnowledgeBase
        except ImportError as exc:
            raise KBUnavailable(f"the knowledge base is not available in this installation: {exc}") from exc
        return lambda path: KnowledgeBase.open(path, self.settings)

    async def close(self) -> None:
        """Close every open knowledge base."""
        for kb in self._open.values():
            close = getattr(kb, "close", None)
            if close is not None:
                await kb_call(close)
        self._open.clear()

    async def get(self, tenant: str, reader: Reader) -> Any:
        """The tenant's knowledge base as ``reader`` sees it (every surface passes its caller's).

        Raises:
            KBUnavailable: the knowledge base cannot be opened, or it cannot answer for one reader
                (a knowledge base without ``for_reader``, asked for a reader who may not read
                everything: refused rather than shown whole).
        """
        async with self._lock:
            if tenant not in self._open:
                opener = self._opener or self._default_opener()
                path = tenant_kb_path(self.settings, tenant)
                path.mkdir(parents=True, exist_ok=True)
                self._open[tenant] = await kb_call(opener, path)
            kb = self._open[tenant]
        if reader.everything:
            return kb
        view = getattr(kb, "for_reader", None)
        if view is None:
            raise KBUnavailable("this knowledge base cannot answer for one reader; its documents are not shown")
        return view(reader)

    def uploads_dir(self, tenant: str) -> Path:
        path = tenant_kb_path(self.settings, tenant) / "uploads"
        path.mkdir(parents=True, exist_ok=True)
        return path
