"""Storage: the sqlite file an index directory keeps its catalog in (documents, chunks, pages,
cached vectors), metadata filters as SQL over it, and the writer lock that gives processes turns."""
