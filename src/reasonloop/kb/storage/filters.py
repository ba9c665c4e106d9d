"""Metadata filters as SQL over the chunk/document tables.

A :class:`~reasonloop.kb.base.Filter` names a field: ``document_id``/``doc_id``, ``source`` and
``title`` are document columns; anything else is looked up in the chunk's metadata JSON (page,
start, end, type, and whatever the loader or record carried). A field that does not exist is
NULL, and NULL matches no condition, so unknown fields match nothing rather than fail. Values
are always bound parameters; field names outside a safe alphabet match nothing.
"""

from __future__ import annotations

import re
from typing import Any

from reasonloop.errors import KBError
from reasonloop.kb.base import Filter

__all__ = ["filter_sql"]

_DOC_COLUMNS = {"document_id": "d.id", "doc_id": "d.id", "source": "d.source", "title": "d.title"}
_FIELD_NAME = re.compile(r"^[A-Za-z0-9_\-.: ]{1,100}$")


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def filter_sql(f: Filter) -> tuple[str, list[Any]]:
    """``(where_clause, parameters)`` for one filter; ``c`` is the chunk row, ``d`` its document.

    Raises:
        KBError: an unknown operator, or a value that does not fit its operator.
    """
    if not _FIELD_NAME.match(f.field):
        return "0", []
    column = _DOC_COLUMNS.get(f.field)
    path = '$."' + f.field + '"'
    expr = column or "json_extract(c.metadata, ?)"
    pre: list[Any] = [] if column else [path]
    op = f.op
    if op == "eq":
        if not _scalar(f.value) or f.value is None:
            return "0", []
        return f"{expr} = ?", [*pre, f.value]
    if op == "in":
        if not isinstance(f.value, list | tuple | set) or not all(_scalar(v) for v in f.value):
            raise KBError(f"filter {f.field!r}: 'in' needs a list of values, got {f.value!r}")
        values = [v for v in f.value if v is not None]
        if not values:
            return "0", []
        return f"{expr} IN ({','.join('?' * len(values))})", [*pre, *values]
    if op == "range":
        if not isinstance(f.value, list | tuple) or len(f.value) != 2 or not all(_scalar(v) for v in f.value):
            raise KBError(f"filter {f.field!r}: 'range' needs [low, high] (either may be null), got {f.value!r}")
        low, high = f.value
        parts, vals = [f"{expr} IS NOT NULL"], list(pre)
        if low is not None:
            parts.append(f"{expr} >= ?")
            vals += [*pre, low]
        if high is not None:
            parts.append(f"{expr} <= ?")
            vals += [*pre, high]
        return " AND ".join(parts), vals
    if op == "contains":
        if not _scalar(f.value) or f.value is None:
            raise KBError(f"filter {f.field!r}: 'contains' needs a single value, got {f.value!r}")
        if column:
            return f"instr({column}, ?) > 0", [str(f.value)]
        return (
            "CASE json_type(c.metadata, ?) WHEN 'array' THEN "
            "EXISTS (SELECT 1 FROM json_each(c.metadata, ?) WHERE json_each.value = ?) "
            "WHEN 'text' THEN instr(json_extract(c.metadata, ?), ?) > 0 ELSE 0 END",
            [path, path, f.value, path, str(f.value)],
        )
    raise KBError(f"unknown filter operator {op!r} on {f.field!r} (use eq, in, range, contains)")
