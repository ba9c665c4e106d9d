"""Retrieval: BM25 (``lexical``, with jieba for Chinese in ``_jieba``), vector stores (``vector``),
fusing their results (``hybrid``) and reranking them (``rerankers/``)."""
