"""Spreadsheets: ``.xlsx`` (openpyxl, a page per sheet) and ``.csv``.

The first non-empty row is the header; every row after it becomes one line that names each
value by its column (``Name: Ada; Year: 1843``), so a chunk of rows reads on its own.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import LoadedDocument, Page, PageFn

__all__ = ["load_csv", "load_xlsx", "markdown_table", "records_text"]


def _value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def records_text(rows: Iterable[Sequence[Any]]) -> str:
    """Rows as ``header: value`` records, a line each (empty rows and cells left out)."""
    header: list[str] | None = None
    lines: list[str] = []
    for raw in rows:
        row = [_value(v) for v in raw]
        if not any(row):
            continue
        if header is None:
            header = [h or f"column {i + 1}" for i, h in enumerate(row)]
            continue
        names = header + [f"column {i + 1}" for i in range(len(header), len(row))]
        fields = [f"{name}: {v}" for name, v in zip(names, row, strict=False) if v]
        lines.append("; ".join(fields))
    if header is not None and not lines:  # a header alone is still the sheet's text
        lines.append("; ".join(header))
    return "\n".join(lines)


def markdown_table(rows: Sequence[Sequence[Any]]) -> str:
    """``rows`` as a Markdown table whose first row is the header."""
    cells = [[_value(v).replace("|", "\\|") for v in row] for row in rows]
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in cells[1:]]
    return "\n".join(lines)


def load_xlsx(data: bytes, source: str, title: str, on_page: PageFn | None = None) -> LoadedDocument:
    import zipfile

    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable .xlsx ({exc})", source=source) from exc
    try:
        sheets = list(book.worksheets)
        pages: list[Page] = []
        for number, sheet in enumerate(sheets, start=1):
            body = records_text(sheet.iter_rows(values_only=True))
            pages.append(Page(number, f"{sheet.title}\n{body}" if body else ""))
            if on_page is not None:
                on_page(number, len(sheets))
        doc_title = (book.properties.title or "").strip() if book.properties else ""
        names = [s.title for s in sheets]
    finally:
        book.close()
    return LoadedDocument.paged(source, doc_title or title, pages, metadata={"type": "xlsx", "sheets": names})


def load_csv(text: str, source: str, title: str) -> LoadedDocument:
    sample = text[:8192]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        body = records_text(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise KBLoadError(f"{source}: malformed CSV ({exc})", source=source) from exc
    return LoadedDocument(source=source, title=title, text=body, metadata={"type": "csv"})
