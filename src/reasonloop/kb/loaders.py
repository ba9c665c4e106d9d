"""Turn files, folders and URLs into plain-text documents.

Supported: ``.txt`` ``.md`` ``.markdown`` ``.html`` ``.htm`` (main text via trafilatura, tag
stripping as fallback), ``.pdf`` (pypdf, page numbers kept), ``.docx`` (python-docx),
``.json`` (an object or a list of objects) and ``.jsonl`` (one object per line) whose records
carry a ``text`` field and optionally ``title``, ``id`` and any other fields (kept as metadata).

A source that cannot be read raises :class:`~reasonloop.errors.KBLoadError` with a reason a
person can act on (empty, binary, not UTF-8, corrupt PDF, ...); callers report it per source and
go on with the rest. A source read in spite of a problem carries a warning saying so
(:attr:`LoadedDocument.warnings`). All functions here are synchronous and CPU/IO bound: run
them in a worker thread.

pypdf logs the repairs it makes to damaged files on its own ``pypdf`` logger, which without a
logging configuration would print them raw on stderr. Once a PDF is loaded here that logger
hands its records to this module instead: each becomes a debug message of
``reasonloop.kb.loaders`` naming the file, and the file gets one warning in our words.
"""

from __future__ import annotations

import fnmatch
import io
import json
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from reasonloop.errors import KBLoadError

__all__ = [
    "DEFAULT_EXCLUDE",
    "SUPPORTED_SUFFIXES",
    "LoadedDocument",
    "RecordError",
    "load_bytes",
    "load_file",
    "walk",
]

SUPPORTED_SUFFIXES: tuple[str, ...] = (
    ".txt",
    ".md",
    ".markdown",
    ".html",
    ".htm",
    ".pdf",
    ".docx",
    ".json",
    ".jsonl",
)
DEFAULT_EXCLUDE: tuple[str, ...] = (".*", "node_modules", "__pycache__")
"""Folder walks skip hidden files and folders (including the ``.reasonloop`` index) and these."""

_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
log = logging.getLogger(__name__)

DAMAGED_PDF = (
    "damaged PDF: its text was recovered, but parts may be missing or out of order "
    "(--debug shows what the PDF reader repaired)"
)


@dataclass
class LoadedDocument:
    """A document's text and what a citation needs about it."""

    source: str
    """Absolute path or URL; ``path#id`` for records of a JSON/JSONL file."""
    title: str
    text: str
    pages: list[tuple[int, int]] | None = None
    """``(start_offset, page_number)`` pairs for paged formats (PDF)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    doc_id: str | None = None
    """Explicit id (JSON records with ``id``); otherwise derived from ``source``."""
    warnings: list[str] = field(default_factory=list)
    """What was wrong with the source though it could be read (a damaged PDF, ...)."""


@dataclass
class RecordError:
    """One bad record inside an otherwise readable JSON/JSONL file."""

    source: str
    reason: str


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


def load_file(path: Path) -> tuple[bytes, list[LoadedDocument | RecordError]]:
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
    return data, load_bytes(data, str(path), suffix=path.suffix.lower(), default_title=path.stem)


def load_bytes(
    data: bytes, source: str, *, suffix: str, default_title: str = "", content_type: str = ""
) -> list[LoadedDocument | RecordError]:
    """Parse ``data`` by ``suffix`` (or by HTTP ``content_type`` when it names a known format).

    Raises:
        KBLoadError: empty, unsupported, corrupt or text-less input.
    """
    if not data.strip():
        raise KBLoadError(f"{source}: empty file", source=source)
    kind = _kind(suffix, content_type)
    if kind is None:
        raise KBLoadError(f"{source}: unsupported file type {suffix or content_type!r}", source=source)
    if kind == "pdf":
        docs: list[LoadedDocument | RecordError] = [_load_pdf(data, source, default_title)]
    elif kind == "docx":
        docs = [_load_docx(data, source, default_title)]
    else:
        text = _decode(data, source)
        if kind == "html":
            docs = [_load_html(text, source, default_title)]
        elif kind == "json":
            docs = _load_json(text, source, default_title)
        elif kind == "jsonl":
            docs = _load_jsonl(text, source, default_title)
        else:
            title = default_title
            if kind == "md" and (m := _MARKDOWN_HEADING.search(text)):
                title = m.group(1)
            docs = [LoadedDocument(source=source, title=title, text=text, metadata={"type": kind})]
    for doc in docs:
        if isinstance(doc, LoadedDocument) and not doc.text.strip():
            raise KBLoadError(f"{source}: no text found", source=source)
    return docs


def _kind(suffix: str, content_type: str) -> str | None:
    ctype = content_type.split(";")[0].strip().lower()
    by_type = {
        "text/html": "html",
        "application/xhtml+xml": "html",
        "application/pdf": "pdf",
        "text/markdown": "md",
        "application/json": "json",
        "application/x-ndjson": "jsonl",
        "application/jsonl": "jsonl",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    }
    by_suffix = {
        ".txt": "txt",
        ".md": "md",
        ".markdown": "md",
        ".html": "html",
        ".htm": "html",
        ".pdf": "pdf",
        ".docx": "docx",
        ".json": "json",
        ".jsonl": "jsonl",
    }
    if ctype in by_type:
        return by_type[ctype]
    if suffix in by_suffix:
        return by_suffix[suffix]
    if ctype.startswith("text/"):
        return "txt"
    return None


def _decode(data: bytes, source: str) -> str:
    if b"\x00" in data[:8192]:
        raise KBLoadError(f"{source}: binary content, not text", source=source)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KBLoadError(f"{source}: not valid UTF-8 (byte {exc.start}); convert it to UTF-8", source=source) from exc


class _PdfMessages(logging.Handler):
    """The ``pypdf`` logger's records: to our log at debug level, and to the PDF being read by
    the thread that logged them (PDFs may be read in several threads at once)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        found: list[str] | None = getattr(self.local, "found", None)
        message = record.getMessage()
        if found is not None:
            found.append(message)
        log.debug("PDF reader on %s: %s", getattr(self.local, "source", "a PDF"), message)

    @contextmanager
    def collect(self, source: str) -> Iterator[list[str]]:
        found: list[str] = []
        self.local.found, self.local.source = found, source
        try:
            yield found
        finally:
            self.local.found = self.local.source = None


_pdf_messages: _PdfMessages | None = None
_pdf_messages_lock = threading.Lock()


def _pdf_log() -> _PdfMessages:
    """The handler taking over the ``pypdf`` logger (installed once)."""
    global _pdf_messages
    with _pdf_messages_lock:
        if _pdf_messages is None:
            _pdf_messages = _PdfMessages()
            pypdf_log = logging.getLogger("pypdf")
            pypdf_log.addHandler(_pdf_messages)
            pypdf_log.propagate = False
        return _pdf_messages


def _load_pdf(data: bytes, source: str, title: str) -> LoadedDocument:
    with _pdf_log().collect(source) as repairs:
        doc = _read_pdf(data, source, title)
    if repairs:
        doc.warnings.append(DAMAGED_PDF)
    return doc


def _read_pdf(data: bytes, source: str, title: str) -> LoadedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages: list[tuple[int, int]] = []
        parts: list[str] = []
        offset = 0
        for number, page in enumerate(reader.pages, start=1):
            text = (page.extract_text() or "").strip()
            if not text:
                continue
            if parts:
                offset += 2  # the "\n\n" joining pages
            pages.append((offset, number))
            parts.append(text)
            offset += len(text)
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable PDF ({exc})", source=source) from exc
    if not parts:
        raise KBLoadError(f"{source}: no extractable text in PDF (scanned images need OCR first)", source=source)
    return LoadedDocument(
        source=source,
        title=str(meta_title).strip() or title,
        text="\n\n".join(parts),
        pages=pages,
        metadata={"type": "pdf", "pages": len(reader.pages)},
    )


def _load_docx(data: bytes, source: str, title: str) -> LoadedDocument:
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable .docx ({exc})", source=source) from exc
    paragraphs = [p.text for p in document.paragraphs if p.text.strip()]
    for table in document.tables:
        for row in table.rows:
            cells = [c.text.strip() for c in row.cells if c.text.strip()]
            if cells:
                paragraphs.append(" | ".join(cells))
    doc_title = (document.core_properties.title or "").strip()
    if not doc_title:
        heading = next((p.text for p in document.paragraphs if p.style.name.startswith(("Title", "Heading"))), "")
        doc_title = heading.strip()
    return LoadedDocument(
        source=source, title=doc_title or title, text="\n\n".join(paragraphs), metadata={"type": "docx"}
    )


class _TextExtractor(HTMLParser):
    """Fallback HTML to text: drops scripts/styles, keeps block breaks, remembers <title>."""

    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style", "noscript"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript"):
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def _load_html(html: str, source: str, title: str) -> LoadedDocument:
    fallback = _TextExtractor()
    fallback.feed(html)
    fallback.close()
    text = ""
    try:
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, include_tables=True, favor_recall=True) or ""
    except Exception:  # trafilatura gives up on odd markup; the plain extractor below still works
        text = ""
    if not text.strip():
        raw = "".join(fallback.parts)
        text = re.sub(r"\n\s*\n\s*", "\n\n", re.sub(r"[ \t\r\f\v]+", " ", raw)).strip()
    return LoadedDocument(
        source=source, title=" ".join(fallback.title.split()) or title, text=text, metadata={"type": "html"}
    )


def _record(obj: Any, source: str, index: int, default_title: str) -> LoadedDocument | RecordError:
    where = f"{source}#{index}"
    if not isinstance(obj, dict):
        return RecordError(where, f"record {index} is not an object")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        return RecordError(where, f"record {index} has no 'text' string")
    rec_id = obj.get("id", obj.get("_id"))
    rec_id = str(rec_id) if rec_id is not None else str(index)
    title = obj.get("title")
    metadata = {k: v for k, v in obj.items() if k not in ("text", "title", "id", "_id")}
    metadata["type"] = "record"
    return LoadedDocument(
        source=f"{source}#{rec_id}",
        title=str(title) if title else f"{default_title} #{rec_id}",
        text=text,
        metadata=metadata,
        doc_id=rec_id,
    )


def _load_json(text: str, source: str, default_title: str) -> list[LoadedDocument | RecordError]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KBLoadError(f"{source}: invalid JSON at line {exc.lineno}: {exc.msg}", source=source) from exc
    items = data if isinstance(data, list) else [data]
    if not items:
        raise KBLoadError(f"{source}: empty JSON list", source=source)
    out = [_record(item, source, i, default_title) for i, item in enumerate(items)]
    if not any(isinstance(d, LoadedDocument) for d in out):
        raise KBLoadError(f"{source}: no record with a 'text' field", source=source)
    return out


def _load_jsonl(text: str, source: str, default_title: str) -> list[LoadedDocument | RecordError]:
    out: list[LoadedDocument | RecordError] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append(RecordError(f"{source}:{lineno}", f"invalid JSON on line {lineno}: {exc.msg}"))
            continue
        out.append(_record(obj, source, lineno - 1, default_title))
    if not any(isinstance(d, LoadedDocument) for d in out):
        raise KBLoadError(f"{source}: no record with a 'text' field", source=source)
    return out
