"""Citations a reader may no longer see, left out of what it reads of a run later.

A run keeps the citations it made. When the documents they cite later stop being readable by
the run's caller (their readers changed), reading the run again (``GET /v1/runs/{id}``, its
event stream) leaves those citations out, text, title and id with them: every list item that
names a ``document_id`` outside what the reader may read now is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

__all__ = ["withhold", "withhold_json"]


def withhold(value: Any, readable: Collection[str]) -> Any:
    """``value`` (JSON data) without the list items that cite a document outside ``readable``:
    objects naming its ``document_id``, and chunk ids (``DOCUMENT:N``) in lists named ``*_ids``."""
    if isinstance(value, dict):
        return {
            key: _without_chunks(item, readable) if key.endswith("_ids") else withhold(item, readable)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [
            withhold(item, readable)
            for item in value
            if not (isinstance(item, dict) and "document_id" in item and item["document_id"] not in readable)
        ]
    return value


def _without_chunks(value: Any, readable: Collection[str]) -> Any:
    if not isinstance(value, list):
        return withhold(value, readable)
    return [
        item for item in value if not (isinstance(item, str) and ":" in item and item.rsplit(":", 1)[0] not in readable)
    ]


def withhold_json(payload: str, readable: Collection[str]) -> str:
    """:func:`withhold` on a JSON text (one that names no document is returned as it is)."""
    if '"document_id"' not in payload and '_ids"' not in payload:
        return payload
    return json.dumps(withhold(json.loads(payload), readable), ensure_ascii=False)
