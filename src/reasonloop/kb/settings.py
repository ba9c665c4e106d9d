"""Options of the local index (``[kb.options]``) and of its retrievers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.errors import ConfigError

__all__ = ["LocalIndexOptions", "RetrieverSettings", "parse_options", "parse_retriever_settings"]


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


class LocalIndexOptions(BaseModel):
    """``[kb.options]`` for the local index."""

    model_config = ConfigDict(extra="forbid")

    chunk_tokens: int = Field(default=200, ge=16)
    chunk_overlap: int = Field(default=30, ge=0)
    embed_title: bool = True
    """Embed ``title + chunk`` (titles carry a lot of meaning for short chunks)."""
    vector_store: Literal["local", "qdrant"] = "local"
    exact_below: int = Field(default=20_000, ge=0)
    """Below this many vectors, dense search is exact (numpy) instead of HNSW."""
    ef_search: int = Field(default=128, ge=8)
    qdrant_url: str = ""
    """Qdrant server; empty uses Qdrant's embedded mode inside the index directory."""
    qdrant_collection: str = "reasonloop"
    qdrant_api_key_env: str = ""
    fetch_timeout_s: float = Field(default=30.0, gt=0)
    max_fetch_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    query_cache: int = Field(default=256, ge=0)
    """How many recent query vectors to keep in memory, least recently used out first (agents repeat
    searches, and hybrid search after dense search embeds the same query again); 0 embeds every query."""
    commit_chunks: int = Field(default=64, ge=1)
    """Chunks per commit group during ingest."""
    embedder: dict[str, Any] = Field(default_factory=dict)
    """Options passed to the embedder (``model``, ``base_url``, ``api_key_env``, ...)."""
    retriever: dict[str, Any] = Field(default_factory=dict)
    """Default :class:`RetrieverSettings`."""
    reranker: dict[str, Any] = Field(default_factory=dict)
    """The reranker of this knowledge base: ``id`` (``http``, ``llm``, ``llama_cpp``) and its options;
    empty for none."""


class RetrieverSettings(BaseModel):
    """How a retriever searches (``mode``, fusion, depth)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    top_k: int = Field(default=10, ge=1)
    fusion: Literal["zscore", "minmax", "rrf"] = "zscore"
    """How hybrid search fuses dense and BM25 results (see :mod:`reasonloop.kb.retrieval.hybrid`)."""
    rrf_k: float = Field(default=60.0, gt=0)
    dense_weight: float = Field(default=1.0, ge=0)
    lexical_weight: float = Field(default=1.0, ge=0)
    candidates: int = Field(default=100, ge=1)
    """Depth fetched from each of dense and BM25 search before fusing."""
    rerank: bool | None = None
    """Reorder the best fused candidates with the reranker: ``None`` does when the knowledge base
    has one, ``True`` requires one, ``False`` never reranks."""
    rerank_depth: int = Field(default=50, ge=1)
    """How many fused candidates the reranker sees."""


def parse_options(raw: dict[str, Any] | LocalIndexOptions | None) -> LocalIndexOptions:
    """Validated options.

    Raises:
        ConfigError: unknown keys or bad values, named.
    """
    if isinstance(raw, LocalIndexOptions):
        options = raw
    else:
        try:
            options = LocalIndexOptions(**(raw or {}))
        except ValidationError as exc:
            raise ConfigError(f"invalid kb.options: {_problems(exc)}") from None
    if options.chunk_overlap * 2 >= options.chunk_tokens:
        raise ConfigError(f"kb.options.chunk_overlap ({options.chunk_overlap}) must be below half of chunk_tokens")
    return options


def parse_retriever_settings(defaults: dict[str, Any], overrides: dict[str, Any] | None) -> RetrieverSettings:
    """``defaults`` updated by ``overrides``, validated.

    Raises:
        ConfigError: unknown keys or bad values, named.
    """
    try:
        return RetrieverSettings(**{**defaults, **(overrides or {})})
    except ValidationError as exc:
        raise ConfigError(f"invalid retriever settings: {_problems(exc)}") from None
