"""Plain-text formats: ``.txt``, Markdown, HTML (main text via trafilatura, tag stripping as
fallback), JSON (an object or a list of objects) and JSONL (one object per line) whose records
carry a ``text`` field and optionally ``title``, ``id`` and any other fields (kept as metadata)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import LoadedDocument, RecordError

__all__ = ["decode", "html_text", "load_html", "load_json", "load_jsonl", "load_text"]

_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


def load_text(text: str, source: str, title: str, kind: str) -> LoadedDocument:
    if kind == "md" and (m := _MARKDOWN_HEADING.search(text)):
        title = m.group(1)
    return LoadedDocument(source=source, title=title, text=text, metadata={"type": kind})


def decode(data: bytes, source: str) -> str:
    if b"\x00" in data[:8192]:
        raise KBLoadError(f"{source}: binary content, not text", source=source)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KBLoadError(f"{source}: not valid UTF-8 (byte {exc.start}); convert it to UTF-8", source=source) from exc


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


def _collapse(raw: str) -> str:
    return re.sub(r"\n\s*\n\s*", "\n\n", re.sub(r"[ \t\r\f\v]+", " ", raw)).strip()


def html_text(html: str) -> str:
    """All the text of ``html`` (scripts and styles dropped), blocks as paragraphs."""
    extractor = _TextExtractor()
    extractor.feed(html)
    extractor.close()
    return _collapse("".join(extractor.parts))


def load_html(html: str, source: str, title: str) -> LoadedDocument:
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
        text = _collapse("".join(fallback.parts))
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


def load_json(text: str, source: str, default_title: str) -> list[LoadedDocument | RecordError]:
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


def load_jsonl(text: str, source: str, default_title: str) -> list[LoadedDocument | RecordError]:
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
