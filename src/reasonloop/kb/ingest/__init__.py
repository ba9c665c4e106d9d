"""Ingest: sources to the rows an index commits.

Finding and reading files and URLs (``sources``, ``reading``, ``fetch``, ``names``), parsing them
in worker processes under limits (``parsing``, ``parse_worker``, ``limits``, ``loaders/``),
chunking (``chunking``, a document's rows in ``prepare``), and the pipeline that chunks, embeds and
commits in groups (``pipeline``, documents given as data in ``records``).
"""

from typing import Any

from reasonloop import _moved


def __getattr__(name: str) -> Any:  # what the module reasonloop.kb.ingest held, for one release
    return _moved.moved_name(__name__, name)
