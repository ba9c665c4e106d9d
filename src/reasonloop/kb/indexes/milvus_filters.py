"""Metadata filters as Milvus boolean expressions, with the local index's meaning.

The same :class:`~reasonloop.kb.base.Filter` means the same thing as in :mod:`reasonloop.kb.storage.filters`:
``document_id``/``doc_id``, ``source`` and ``title`` are document fields (scalar fields of the
collection); anything else is a key of the chunk's metadata (a JSON field). A key that does not
exist matches no condition. Values are written as JSON literals (Milvus reads their quoting);
field names outside a safe alphabet, and conditions that cannot match, make the whole filter
match nothing: :func:`filter_expr` then returns ``""``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from reasonloop.errors import KBError
from reasonloop.kb.base import Filter

__all__ = ["filter_expr"]

_DOC_FIELDS = {"document_id": "doc_id", "doc_id": "doc_id", "source": "source", "title": "title"}
_FIELD_NAME = re.compile(r"^[A-Za-z0-9_\-.: ]{1,100}$")


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def _like_pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return _literal(f"%{escaped}%")


def _condition(f: Filter) -> str | None:
    """One filter as an expression; ``None`` when it cannot match.

    Raises:
        KBError: an unknown operator, or a value that does not fit its operator.
    """
    if not _FIELD_NAME.match(f.field):
        return None
    column = _DOC_FIELDS.get(f.field)
    expr = column or f"meta[{_literal(f.field)}]"
    op = f.op
    if op == "eq":
        if not _scalar(f.value) or f.value is None:
            return None
        if column and not isinstance(f.value, str):
            return None
        return f"{expr} == {_literal(f.value)}"
    if op == "in":
        if not isinstance(f.value, list | tuple | set) or not all(_scalar(v) for v in f.value):
            raise KBError(f"filter {f.field!r}: 'in' needs a list of values, got {f.value!r}")
        values = [v for v in f.value if v is not None and (not column or isinstance(v, str))]
        if not values:
            return None
        return "(" + " or ".join(f"{expr} == {_literal(v)}" for v in values) + ")"
    if op == "range":
        if not isinstance(f.value, list | tuple) or len(f.value) != 2 or not all(_scalar(v) for v in f.value):
            raise KBError(f"filter {f.field!r}: 'range' needs [low, high] (either may be null), got {f.value!r}")
        low, high = f.value
        parts = []
        if low is not None:
            parts.append(f"{expr} >= {_literal(low)}")
        if high is not None:
            parts.append(f"{expr} <= {_literal(high)}")
        if not parts:
            parts.append(f"exists {expr}" if not column else f"{expr} != ''")
        return "(" + " and ".join(parts) + ")"
    if op == "contains":
        if not _scalar(f.value) or f.value is None:
            raise KBError(f"filter {f.field!r}: 'contains' needs a single value, got {f.value!r}")
        if column:
            return f"{expr} like {_like_pattern(str(f.value))}"
        return f"(json_contains({expr}, {_literal(f.value)}) or {expr} like {_like_pattern(str(f.value))})"
    raise KBError(f"unknown filter operator {op!r} on {f.field!r} (use eq, in, range, contains)")


def filter_expr(filters: Sequence[Filter]) -> str:
    """The filters ANDed into one expression; ``""`` when they cannot all match.

    Raises:
        KBError: an unknown operator, or a value that does not fit its operator.
    """
    parts = []
    for f in filters:
        condition = _condition(f)
        if condition is None:
            return ""
        parts.append(condition)
    return " and ".join(parts)
