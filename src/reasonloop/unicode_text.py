"""Text from outside that can be stored and sent on: no lone surrogates.

JSON may carry ``"\\ud800"``, half of a UTF-16 pair (JavaScript clients send it when a string is
cut mid-emoji). Python decodes it into a string that has no UTF-8 form: a database, a socket or
a JSON encoder that writes UTF-8 fails on it. Request models that take text from clients derive
from :class:`CheckedText`, so such a request is refused as invalid, naming the field, before
anything is stored.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator

__all__ = ["CheckedText", "lone_surrogate"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """Where ``value`` (a string, or lists and dicts of them) holds a lone surrogate: ``""`` for the
    value itself, ``"a.b"`` for a nested key or index; None when it holds none."""
    if isinstance(value, str):
        return "" if not value.isascii() and _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = lone_surrogate(key) if isinstance(key, str) else None
            if where is None:
                where = lone_surrogate(item)
            if where is not None:
                return f"{key}.{where}".rstrip(".") if isinstance(key, str) and key.isascii() else "?"
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            where = lone_surrogate(item)
            if where is not None:
                return f"{index}.{where}".rstrip(".")
    return None


class CheckedText(BaseModel):
    """A request model whose text fields, nested ones included, must be valid Unicode."""

    @field_validator("*", mode="after")
    @classmethod
    def _no_lone_surrogates(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, BaseModel):
            return value  # a nested model checks its own fields
        where = lone_surrogate(value)
        if where is not None:
            inside = f" (at {where})" if where else ""
            raise ValueError(f"text holds a lone surrogate{inside}: half of a UTF-16 pair, which has no UTF-8 form")
        return value
