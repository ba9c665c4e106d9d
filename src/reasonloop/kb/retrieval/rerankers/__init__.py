"""Rerankers: re-score the fused candidates of a search with a stronger model.

A reranker is a plugin of kind ``reranker``: ``http`` (a rerank endpoint: Hugging Face TEI,
or the Jina / Cohere / vLLM ``/v1/rerank`` shape), ``llm`` (listwise, by any configured model)
and ``llama_cpp`` (a local GGUF reranker through llama-cpp-python). :mod:`.base` holds the
contract and the step that applies one to hits without ever losing them.
"""

from reasonloop.kb.retrieval.rerankers.base import Reranker, RerankReport, RerankScores, RerankStep, create_reranker

__all__ = ["RerankReport", "RerankScores", "RerankStep", "Reranker", "create_reranker"]
