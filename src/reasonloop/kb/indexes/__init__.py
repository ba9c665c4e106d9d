"""Indexes: the ``index`` plugins, which keep a catalog and search it (``local``: tantivy and usearch
or Qdrant in the index directory; ``milvus``: a Milvus collection, with its filter expressions)."""
