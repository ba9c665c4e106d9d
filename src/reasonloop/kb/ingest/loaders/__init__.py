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

import errno
import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.limits import ParseLimits, check_archive, refuse_entities
from reasonloop.kb.ingest.loaders.document import LoadedDocument, Page, PageFn, RecordError, missing_extra
from reasonloop.kb.ingest.loaders.pdf import DAMAGED_PDF

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


def walk(
    root: Path,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    skipped: dict[str, str] | None = None,
) -> Iterator[Path]:
    """Files under ``root`` (recursive, sorted) matching ``include`` and not ``exclude``.

    Patterns are shell globs tried against the path relative to ``root`` and against each
    path component, so ``"drafts"`` excludes a folder and ``"*.md"`` includes Markdown anywhere.
    Without ``include``, every supported suffix is included. Excluded folders are not entered.

    Symbolic links: a link to a file inside ``root`` yields that file (the caller resolves it
    and so reads it once); a link to a folder is not walked: when it leads inside ``root`` its
    files are found where they are, and a link back to ``root`` or one of its ancestors (a
    loop) could not be walked at all. A link that leads outside ``root``, a broken link and a
    link loop are left out. Each link left out (other than one to a folder inside ``root``) is
    put in ``skipped`` (path -> why), when given.
    """
    excludes = list(DEFAULT_EXCLUDE) + list(exclude or [])
    real_root = root.resolve()

    def excluded(rel: Path) -> bool:
        return any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in excludes) or any(
            fnmatch.fnmatch(rel.as_posix(), pat) for pat in excludes
        )

    def wanted(path: Path, rel: Path) -> bool:
        if include:
            return any(fnmatch.fnmatch(rel.as_posix(), pat) or fnmatch.fnmatch(path.name, pat) for pat in include)
        return path.suffix.lower() in SUPPORTED_SUFFIXES

    def skip(path: Path, why: str) -> None:
        if skipped is not None:
            skipped[str(path)] = why

    def files(folder: Path) -> Iterator[Path]:
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            skip(folder, f"cannot read the folder: {exc.strerror or exc}")
            return
        for entry in entries:
            path = folder / entry.name
            rel = path.relative_to(root)
            if excluded(rel):
                continue
            if entry.is_symlink():
                target, why = _link_target(path, real_root)
                if target is None:
                    # Said for a loop, and for a link that would have been read (a folder, or a
                    # file of a kind we read).
                    if why and (why.startswith(_LOOP) or wanted(path, rel) or entry.is_dir()):
                        skip(path, why)
                elif target.is_file() and wanted(path, rel):
                    yield path
            elif entry.is_dir(follow_symlinks=False):
                yield from files(path)
            elif entry.is_file(follow_symlinks=False) and wanted(path, rel):
                yield path

    yield from files(root)


_LOOP = "a symbolic link loop"


def _link_target(link: Path, real_root: Path) -> tuple[Path | None, str]:
    """Where the symbolic link ``link`` leads, when it leads inside ``real_root`` and is not a
    loop; else ``None`` and why it is left out (empty for a folder inside ``real_root``, whose
    files are found where they are)."""
    try:
        target = link.resolve(strict=True)
    except RuntimeError:  # how Python before 3.13 reports a loop
        return None, f"{_LOOP}: left out"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"{_LOOP}: left out"
        return None, "a broken symbolic link: left out"
    outside = target != real_root and real_root not in target.parents
    if target.is_dir():
        home = link.parent.resolve()
        if target == home or target in home.parents:
            return None, f"{_LOOP} (it leads back to {target}): not walked"
        if not outside:
            return None, ""
    if outside:
        what = "folder" if target.is_dir() else "file"
        return None, f"a symbolic link to a {what} outside the folder ({target}): left out; name it to ingest it"
    return target, ""


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

    This parses in the calling process: untrusted files go through :mod:`reasonloop.kb.ingest.parsing`,
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
    from reasonloop.kb.ingest.loaders import text as plain

    if kind == "pdf":
        from reasonloop.kb.ingest.loaders.pdf import load_pdf

        return [load_pdf(data, source, title, on_page, max_pixels=limits.max_pixels)]
    if kind == "docx":
        from reasonloop.kb.ingest.loaders.word import load_docx

        return [load_docx(data, source, title)]
    if kind == "pptx":
        from reasonloop.kb.ingest.loaders.slides import load_pptx

        return [load_pptx(data, source, title, on_page)]
    if kind == "xlsx":
        from reasonloop.kb.ingest.loaders.sheets import load_xlsx

        return [load_xlsx(data, source, title, on_page)]
    if kind == "epub":
        from reasonloop.kb.ingest.loaders.ebook import load_epub

        return [load_epub(data, source, title, on_page)]
    if kind == "image":
        from reasonloop.kb.ingest.loaders.images import load_image

        return [load_image(data, source, title, on_page, limits=limits)]
    text = plain.decode(data, source)
    if kind == "csv":
        from reasonloop.kb.ingest.loaders.sheets import load_csv

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
