"""The settings of the retrieval step of a run: query transforms and reranking overrides."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RetrievalSettings"]


class RetrievalSettings(BaseModel):
    """How the retrieval step of a run searches: query transforms and reranking."""

    model_config = ConfigDict(extra="forbid")

    condense: bool = True
    """Rewrite a follow-up question into a standalone query before searching."""
    multi_query: int = Field(default=0, ge=0, le=5)
    """Other phrasings the model writes and searches too, fused with the question's hits (0: off)."""
    hyde: bool = False
    """Also search the embedding of a hypothetical answer the model writes."""
    rerank: bool | None = None
    """``False`` skips the knowledge base's reranker for this run; ``None`` (or ``True``) uses it where
    one is configured."""
    rerank_candidates: int | None = Field(default=None, ge=1, le=500)
    """How many fused candidates the reranker orders (default: the knowledge base's ``rerank_depth``)."""
