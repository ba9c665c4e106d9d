"""Strict reading of evaluation files: JSON and JSONL, and the fields of one record, each failure an
:class:`~reasonloop.errors.EvalDataError` naming the file, the line (for JSONL) and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reasonloop.errors import EvalDataError

__all__ = ["bad_data", "read_json", "read_jsonl", "str_list_field", "text_field"]


def bad_data(path: Path, message: str, *, line: int | None = None, field_name: str | None = None) -> EvalDataError:
    where = f"{path}:{line}" if line else str(path)
    extra = f" (field {field_name!r})" if field_name else ""
    return EvalDataError(f"{where}: {message}{extra}", file=str(path), line=line, field=field_name)


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise bad_data(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise bad_data(path, f"not valid JSON: {exc}", line=line) from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line."""
    if not path.is_file():
        raise bad_data(path, "file not found")
    with path.open(encoding="utf-8") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise bad_data(path, f"not valid JSON: {exc.msg}", line=number) from None
            if not isinstance(obj, dict):
                raise bad_data(path, "expected a JSON object", line=number)
            yield number, obj


def text_field(
    path: Path, obj: dict[str, Any], names: tuple[str, ...], line: int | None, *, empty_ok: bool = False
) -> str:
    for name in names:
        if name in obj:
            value = obj[name]
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise bad_data(path, "expected a string", line=line, field_name=name)
            value = str(value)
            if not value.strip() and not empty_ok:
                raise bad_data(path, "is empty", line=line, field_name=name)
            return value
    raise bad_data(path, "missing", line=line, field_name=" or ".join(names))


def str_list_field(path: Path, obj: dict[str, Any], name: str, line: int | None, *, required: bool = True) -> list[str]:
    if name not in obj:
        if required:
            raise bad_data(path, "missing", line=line, field_name=name)
        return []
    value = obj[name]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str | int) and not isinstance(v, bool) for v in value):
        raise bad_data(path, "expected a list of strings", line=line, field_name=name)
    return [str(v) for v in value]
