"""What the shared Milvus collection holds: its fields and their sizes, the BM25 function and its
analyzer, its indexes, and the options of the ``milvus`` index that shape them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from reasonloop.kb.settings import LocalIndexOptions

__all__ = ["DEFAULT_ANALYZER", "MAX_VARCHAR", "MilvusIndexOptions", "clip", "collection_rows", "new_collection"]

DEFAULT_ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": ["lowercase", "cnalphanumonly", {"type": "stemmer", "language": "english"}],
}
"""jieba segments Chinese and splits other text at spaces and punctuation (dropped: the filter keeps
words of letters, digits and Chinese characters); English is lower-cased and stemmed."""

MAX_VARCHAR = 65_535
"""Milvus's longest VARCHAR, in bytes."""


class MilvusIndexOptions(LocalIndexOptions):
    """``[kb.options]`` of the ``milvus`` index: the local index's, and where Milvus is."""

    milvus_uri: str = ""
    """Milvus server (``http://host:19530``), or a Milvus Lite file (``*.db``); empty opens Milvus Lite
    on ``milvus.db`` in the index directory."""
    milvus_collection: str = Field(default="reasonloop", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
    milvus_token_env: str = ""
    """Variable holding the server's token (``user:password`` or an API key)."""
    milvus_tenant: str = ""
    """Tenant of this knowledge base in the shared collection; empty: a server tenant's directory
    name (``.../tenants/<name>``), else ``default``."""
    milvus_timeout_s: float = Field(default=10.0, gt=0)
    """How long to wait for Milvus to answer (connecting included)."""
    milvus_analyzer: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_ANALYZER))
    """Milvus analyzer parameters of the BM25 text (``{"type": "chinese"}``, ``{"type": "english"}``, ...)."""
    milvus_partition_key: bool | None = None
    """Tenants as a partition key: ``None`` does on a server and not on Milvus Lite."""


def clip(text: str, limit: int = MAX_VARCHAR) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8 (never inside a character)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def new_collection(client: Any, dim: int, options: MilvusIndexOptions, *, lite: bool) -> tuple[Any, Any]:
    """The schema and index parameters of a new collection of ``dim``-d vectors (``lite``: Milvus Lite)."""
    from pymilvus import DataType, Function, FunctionType

    partition_key = options.milvus_partition_key
    if partition_key is None:
        partition_key = not lite
    schema = client.create_schema(auto_id=True, enable_dynamic_field=False)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("key", DataType.INT64)
    schema.add_field("tenant", DataType.VARCHAR, max_length=256, is_partition_key=partition_key)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=256)
    schema.add_field("source", DataType.VARCHAR, max_length=4096)
    schema.add_field("title", DataType.VARCHAR, max_length=4096)
    schema.add_field(
        "text",
        DataType.VARCHAR,
        max_length=MAX_VARCHAR,
        enable_analyzer=True,
        analyzer_params=options.milvus_analyzer,
    )
    schema.add_field("meta", DataType.JSON)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25", function_type=FunctionType.BM25, input_field_names=["text"], output_field_names=["sparse"]
        )
    )
    index = client.prepare_index_params()
    index.add_index("dense", index_type="AUTOINDEX" if not lite else "FLAT", metric_type="IP")
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return schema, index


def collection_rows(
    tenant: str, rows: Sequence[tuple[int, str, str, str, str, dict[str, Any]]], vectors: np.ndarray
) -> list[dict[str, Any]]:
    """``(key, doc_id, source, title, text, metadata)`` rows of ``tenant`` with their vectors, as
    the collection's fields (each text clipped to its field's size; BM25 reads title and text)."""
    vecs = np.asarray(vectors, dtype=np.float32)
    return [
        {
            "key": int(key),
            "tenant": tenant,
            "doc_id": clip(doc_id, 256),
            "source": clip(source, 4096),
            "title": clip(title, 4096),
            "text": clip(f"{title}\n{text}" if title else text),
            "meta": meta,
            "dense": vec.tolist(),
        }
        for (key, doc_id, source, title, text, meta), vec in zip(rows, vecs, strict=True)
    ]
