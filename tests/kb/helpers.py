"""Test helpers for the kb layer: file builders, a loopback HTTP server and a fake embedder."""

from __future__ import annotations

import hashlib
import io
import re
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from reasonloop.kb.embedding.embedders import Embedder

Handler = Callable[[BaseHTTPRequestHandler], None]


def make_pdf(pages: Sequence[str]) -> bytes:
    """A real PDF with one line of Helvetica text per page."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=612, height=792)
        stream = DecodedStreamObject()
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream.set_data(f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def make_damaged_pdf(pages: Sequence[str]) -> bytes:
    """A PDF whose cross-reference offsets are wrong: pypdf reads it, repairing as it goes (and
    logging each repair as a warning)."""
    data = make_pdf(pages)
    damaged = re.sub(rb"startxref\n(\d+)", lambda m: b"startxref\n" + str(int(m.group(1)) + 7).encode(), data)
    assert damaged != data
    return damaged


def make_docx(paragraphs: Sequence[str], title: str = "") -> bytes:
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for p in paragraphs:
        document.add_paragraph(p)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "cell-a"
    table.rows[0].cells[1].text = "cell-b"
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 whose routes are plain functions."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        routes_ = routes

        class _H(BaseHTTPRequestHandler):
            def _dispatch(self) -> None:
                fn = routes_.get(self.path.split("?")[0])
                if fn is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                fn(self)

            do_GET = _dispatch
            do_POST = _dispatch

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def reply(handler: BaseHTTPRequestHandler, body: bytes, content_type: str, status: int = 200) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


_WORD = re.compile(r"\w+")


class HashEmbedder(Embedder):
    """Deterministic bag-of-words vectors: texts sharing words get similar vectors.

    Each lower-cased word (or CJK character) is hashed to a dimension; the vector is the
    L2-normalised count vector. Counts every text it embeds in ``calls``.
    """

    def __init__(self, dim: int = 64, name: str = "hash-test") -> None:
        self.name = name
        self.dim = dim
        self.calls: list[str] = []
        self.max_batch = 8

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in _WORD.findall(text.lower()):
            pieces = list(w) if re.search(r"[\u4e00-\u9fff]", w) else [w]
            for p in pieces:
                h = int.from_bytes(hashlib.blake2b(p.encode(), digest_size=4).digest(), "little")
                v[h % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        if n == 0:
            v[0] = 1.0
            return v
        return v / n

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    async def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
