"""Knowledge base: loaders, chunking, embeddings, BM25, vectors and hybrid retrieval.

``KnowledgeBase`` and the other heavy names load on first use, so importing the contracts in
:mod:`reasonloop.kb.base` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Before numpy and the embedding engine load: their thread settings are read once, at load.
import reasonloop._native_threads  # noqa: F401

if TYPE_CHECKING:
    from reasonloop.kb.embedding.cache import CachedEmbedder
    from reasonloop.kb.embedding.embedders import Embedder
    from reasonloop.kb.ingest.records import Record
    from reasonloop.kb.knowledge_base import KnowledgeBase

__all__ = ["CachedEmbedder", "Embedder", "KnowledgeBase", "Record"]

_LAZY = {
    "KnowledgeBase": "reasonloop.kb.knowledge_base",
    "Record": "reasonloop.kb.ingest.records",
    "Embedder": "reasonloop.kb.embedding.embedders",
    "CachedEmbedder": "reasonloop.kb.embedding.cache",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonloop.kb' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
