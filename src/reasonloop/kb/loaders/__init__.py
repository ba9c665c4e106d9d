"""Turn files, folders and URLs into documents: text, pages, and what a citation needs.

Supported: ``.txt`` ``.md`` ``.markdown`` ``.html`` ``.htm`` ``.json`` ``.jsonl``
(:mod:`.text`), ``.pdf`` (:mod:`.pdf`: text page by page, ruled tables as Markdown tables,
scanned pages OCR'd), ``.docx`` (:mod:`.word`), ``.pptx`` (:mod:`.slides`: a page per slide),
``.xlsx`` and ``.csv`` (:mod:`.sheets`: a row per line with its header), ``.epub``
(:mod:`.ebook`: a page per chapter), and images ``.png`` ``.jpg`` ``.jpeg`` ``.tif`` ``.tiff``
(:mod:`.images`, OCR'd: Chinese and English). Slides, spreadsheets, e-books and OCR need the
``documents`` extra; without it such a file fails alone, with what to install.

A source that cannot be read raises :class:`~reasonloop.errors.KBLoadError` with a reason a
person can act on (empty, binary, not UTF-8, corrupt or password-protected PDF, ...); callers
report it per source and go on with the rest. A source read in spite of a problem carries a
warning saying so (:attr:`LoadedDocument.warnings`). All functions here are synchronous and
CPU/IO bound: run them in a worker thread.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from pathlib import Path

from reasonloop.errors import KBLoadError
from reasonloop.kb.limits import ParseLimits, check_archive, refuse_entities
from reasonloop.kb.loaders.document import LoadedDocument, Page, PageFn, RecordError, missing_extra
from reasonloop.kb.loaders.pdf import DAMAGED_PDF

__all__ = [
    "DAMAGED_PDF",
    "DEFAULT_EXCLUDE",
    "SUPPORTED_SUFFIXES",
    "ZIP_KINDS",
    "LoadedDocument",
    "Page",
    "RecordError",
    "kind_of",
    "load_bytes",
    "load_file",
    "walk",
]

_BY_SUFFIX: dict[str, str] = {
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".json": "json",
    ".jsonl": "jsonl",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
    ".epub": "epub",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}
_BY_TYPE: dict[str, str] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "text/markdown": "md",
    "text/csv": "csv",
    "application/json": "json",
    "application/x-ndjson": "jsonl",
    "application/jsonl": "jsonl",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/epub+zip": "epub",
    "image/png": "image",
    "image/jpeg": "image",
    "image/tiff": "image",
}
ZIP_KINDS = frozenset({"docx", "pptx", "xlsx", "epub"})
"""Formats that are zip containers of XML: their members are checked before a parser opens them."""
_NEEDS_EXTRA = {
    "pptx": "slides (.pptx)",
    "xlsx": "spreadsheets (.xlsx)",
    "epub": "e-books (.epub)",
    "image": "images (OCR)",
}

SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_BY_SUFFIX)
DEFAULT_EXCLUDE: tuple[str, ...] = (".*", "node_modules", "__pycache__")
"""Folder walks skip hidden files and folders (including the ``.reasonloop`` index) and these."""


def walk(root: Path, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> Iterator[Path]:
    """Files under ``root`` (recursive, sorted) matching ``include`` and not ``exclude``.

    Patterns are shell globs tried against the path relative to ``root`` and against each
    path component, so ``"drafts"`` excludes a folder and ``"*.md"`` includes Markdown anywhere.
    Without ``include``, every supported suffix is included.
    """
    excludes = list(DEFAULT_EXCLUDE) + list(exclude or [])
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        rel_posix = rel.as_posix()
        if any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in excludes) or any(
            fnmatch.fnmatch(rel_posix, pat) for pat in excludes
        ):
            continue
        if not path.is_file():
            continue
        if include:
            if not any(fnmatch.fnmatch(rel_posix, pat) or fnmatch.fnmatch(path.name, pat) for pat in include):
                continue
        elif path.suffix.lower() not in SUPPORTED_SUFFIXES:
            continue
        yield path


def load_file(path: Path, on_page: PageFn | None = None) -> tuple[bytes, list[LoadedDocument | RecordError]]:
    """Read and parse one file.

    Returns:
        The raw bytes (for content hashing) and the documents in it (JSON/JSONL files may hold
        many; bad records come back as :class:`RecordError`).

    Raises:
        KBLoadError: the file cannot be read or parsed, or holds no text.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KBLoadError(f"cannot read {path}: {exc.strerror or exc}", source=str(path)) from exc
    docs = load_bytes(data, str(path), suffix=path.suffix.lower(), default_title=path.stem, on_page=on_page)
    return data, docs


def load_bytes(
    data: bytes,
    source: str,
    *,
    suffix: str,
    default_title: str = "",
    content_type: str = "",
    on_page: PageFn | None = None,
    limits: ParseLimits | None = None,
) -> list[LoadedDocument | RecordError]:
    """Parse ``data`` by ``suffix`` (or by HTTP ``content_type`` when it names a known format).

    This parses in the calling process: untrusted files go through :mod:`reasonloop.kb.parsing`,
    which calls this in a worker process under memory and time limits.

    Args:
        on_page: Called with ``(pages_done, pages_total)`` after each page of a paged format.
        limits: Sizes and pixels a file may unpack to (default :class:`ParseLimits`).

    Raises:
        KBLoadError: empty, unsupported, corrupt or text-less input, over the ``limits``, or a
            format whose optional dependencies are not installed.
    """
    limits = limits or ParseLimits()
    if not data.strip():
        raise KBLoadError(f"{source}: empty file", source=source)
    kind = _kind(suffix, content_type)
    if kind is None:
        raise KBLoadError(f"{source}: unsupported file type {suffix or content_type!r}", source=source)
    if kind in ZIP_KINDS:
        check_archive(data, source, limits)
        refuse_entities(data, source)
    try:
        docs = _parse(kind, data, source, default_title, on_page, limits)
    except ImportError as exc:
        if kind not in _NEEDS_EXTRA:
            raise
        raise missing_extra(source, _NEEDS_EXTRA[kind], exc) from exc
    for doc in docs:
        if isinstance(doc, LoadedDocument) and not doc.text.strip():
            raise KBLoadError(f"{source}: no text found", source=source)
    return docs


def kind_of(suffix: str, content_type: str = "") -> str | None:
    """The format of a file by its ``suffix`` or HTTP ``content_type`` (``None``: unsupported)."""
    return _kind(suffix, content_type)


def _parse(
    kind: str, data: bytes, source: str, title: str, on_page: PageFn | None, limits: ParseLimits
) -> list[LoadedDocument | RecordError]:
    from reasonloop.kb.loaders import text as plain

    if kind == "pdf":
        from reasonloop.kb.loaders.pdf import load_pdf

        return [load_pdf(data, source, title, on_page, max_pixels=limits.max_pixels)]
    if kind == "docx":
        from reasonloop.kb.loaders.word import load_docx

        return [load_docx(data, source, title)]
    if kind == "pptx":
        from reasonloop.kb.loaders.slides import load_pptx

        return [load_pptx(data, source, title, on_page)]
    if kind == "xlsx":
        from reasonloop.kb.loaders.sheets import load_xlsx

        return [load_xlsx(data, source, title, on_page)]
    if kind == "epub":
        from reasonloop.kb.loaders.ebook import load_epub

        return [load_epub(data, source, title, on_page)]
    if kind == "image":
        from reasonloop.kb.loaders.images import load_image

        return [load_image(data, source, title, on_page, limits=limits)]
    text = plain.decode(data, source)
    if kind == "csv":
        from reasonloop.kb.loaders.sheets import load_csv

        return [load_csv(text, source, title)]
    if kind == "html":
        return [plain.load_html(text, source, title)]
    if kind == "json":
        return plain.load_json(text, source, title)
    if kind == "jsonl":
        return plain.load_jsonl(text, source, title)
    return [plain.load_text(text, source, title, kind)]


def _kind(suffix: str, content_type: str) -> str | None:
    ctype = content_type.split(";")[0].strip().lower()
    if ctype in _BY_TYPE:
        return _BY_TYPE[ctype]
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if ctype.startswith("text/"):
        return "txt"
    return None
