"""Knowledge base over HTTP: upload (multipart, with ingest progress on request), list, delete,
stats, search (hybrid, dense or lexical) — per tenant.

Each tenant has its own knowledge base (:mod:`reasonloop.server.tenancy`), so one tenant never sees
another's documents. Uploaded files are stored under ``uploads/`` with sanitised names before ingestion. The answer
to an upload says, file by file, what became of it (``added``, ``updated``, ``unchanged`` or
``failed`` with the reason); a file that could not be ingested is removed from ``uploads/``, and
whatever a file holds, the answer is never a bare server error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, File, Form, Query, Request, UploadFile
from fastapi.encoders import jsonable_encoder
from fastapi.responses import StreamingResponse

from reasonloop.errors import (
    ConfigError,
    DocumentNotFound,
    KBError,
    ReasonLoopError,
    RequestInvalid,
    UploadTooLarge,
)
from reasonloop.kb.access import parse_readers
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller
from reasonloop.server.tenancy import KBProvider, kb_call, safe_filename

__all__ = ["MAX_FILES_PER_UPLOAD", "UPLOAD_PATH", "router", "upload_body_limit"]

router = APIRouter(prefix="/v1/kb", tags=["knowledge base"])

_CHUNK = 1024 * 1024
UPLOAD_PATH = "/v1/kb/documents"
"""Where uploads are posted (:func:`upload`)."""
MAX_FILES_PER_UPLOAD = 32
"""Files one upload request may carry; with the per-file limit it bounds the whole body."""
_MULTIPART_OVERHEAD = 64 * 1024


def upload_body_limit(max_upload_bytes: int) -> int:
    """The most bytes an upload's whole body may have (``[server] max_upload_bytes`` a file),
    refused before the multipart body is spooled to disk
    (:class:`~reasonloop.server.middleware.UploadSizeGuard`)."""
    return max_upload_bytes * MAX_FILES_PER_UPLOAD + _MULTIPART_OVERHEAD


def _kb(request: Request) -> KBProvider:
    return server_state(request).kb


def _unique(directory: Path, name: str) -> Path:
    target = directory / name
    stem, suffix = target.stem, target.suffix
    n = 1
    while target.exists():
        target = directory / f"{stem}-{n}{suffix}"
        n += 1
    return target


@router.post("/documents", status_code=201, response_model=None)
async def upload(
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    files: Annotated[list[UploadFile], File()],
    readers: Annotated[
        str | None,
        Form(description="Who may read the documents: 'alice, group:finance' (unset: everyone in the tenant)."),
    ] = None,
    progress: bool = Query(False, description="Stream the ingest's progress as NDJSON lines."),
) -> dict[str, Any] | StreamingResponse:
    """Upload documents and ingest them. Files over ``[server] max_upload_bytes`` are refused (413).

    ``readers`` (a form field) names who may read them: users (``alice``) and groups
    (``group:finance``) of the tenant; without it, everyone in the tenant may.

    With ``progress=true`` the answer (once the files are stored) is ``application/x-ndjson``:
    ``{"type": "progress", ...}`` lines as chunks are embedded (``chunks_done`` of
    ``chunks_total``), then ``{"type": "done", "files", "results", "report"}``, or ``{"type": "error",
    "error": {"code", "message"}}`` when the ingest failed.

    ``results`` holds one ``{"file", "status"}`` per stored file, ``status`` one of ``added``,
    ``updated``, ``unchanged``, ``failed`` (then with ``reason``); failed files are not kept.
    """
    state = server_state(request)
    canonical = None if readers is None else parse_readers(readers)  # refused before anything is stored
    limit = state.settings.server.max_upload_bytes
    provider = _kb(request)
    directory = provider.uploads_dir(who.tenant)
    saved: list[Path] = []
    if len(files) > MAX_FILES_PER_UPLOAD:
        raise UploadTooLarge(f"at most {MAX_FILES_PER_UPLOAD} files per upload", limit=MAX_FILES_PER_UPLOAD)
    try:
        for upload_file in files:
            target = _unique(directory, safe_filename(upload_file.filename or ""))
            size = 0
            try:
                with target.open("wb") as out:
                    saved.append(target)
                    while chunk := await upload_file.read(_CHUNK):
                        size += len(chunk)
                        if size > limit:
                            raise UploadTooLarge(
                                f"{upload_file.filename!r} is larger than the upload limit of {limit} bytes",
                                limit=limit,
                                filename=upload_file.filename,
                            )
                        out.write(chunk)
            except OSError as exc:
                raise KBError(f"could not store {upload_file.filename!r}: {exc.strerror or exc}") from exc
    except BaseException:  # nothing of a failed upload stays behind, unseen by the knowledge base
        for path in saved:
            path.unlink(missing_ok=True)
        raise
    try:
        kb = await provider.get(who.tenant, who.reader)
    except BaseException:
        _forget(saved)
        raise
    names = [p.name for p in saved]
    given: dict[str, Any] = {} if canonical is None else {"readers": canonical}
    if progress:
        return StreamingResponse(
            _ingest_lines(kb, saved, names, given), status_code=201, media_type="application/x-ndjson"
        )
    try:
        report = await kb_call(kb.ingest, [str(p) for p in saved], **given)
    except ReasonLoopError:
        _forget(saved)
        raise
    except Exception as exc:  # said as a knowledge-base error, in JSON like every other
        _forget(saved)
        raise KBError(f"the ingest failed: {exc}") from exc
    return {"files": names, "results": _results(saved, report), "report": jsonable_encoder(report)}


def _forget(saved: list[Path]) -> None:
    for path in saved:
        path.unlink(missing_ok=True)


def _results(saved: list[Path], report: Any) -> list[dict[str, Any]]:
    """What became of each stored file; a file that failed is removed from ``uploads/``."""
    failed: dict[str, str] = getattr(report, "failed", {}) or {}
    outcome = {
        **{s: "added" for s in getattr(report, "added", [])},
        **{s: "updated" for s in getattr(report, "updated", [])},
        **{s: "unchanged" for s in getattr(report, "unchanged", [])},
    }
    results: list[dict[str, Any]] = []
    for path in saved:
        source = str(path.resolve())
        entry: dict[str, Any] = {"file": path.name}
        if source in failed or str(path) in failed:
            entry["status"] = "failed"
            entry["reason"] = failed.get(source) or failed.get(str(path))
            path.unlink(missing_ok=True)
        else:
            # A JSON/JSONL file's records are sources of their own (``path#id``).
            records = [st for s, st in outcome.items() if s.split("#", 1)[0] == source]
            entry["status"] = outcome.get(source) or (records[0] if records else "unchanged")
            bad = {s: r for s, r in failed.items() if s.startswith(source + "#") or s.startswith(source + ":")}
            if bad:
                entry["failed_records"] = bad
        results.append(entry)
    return results


_INGESTS: set[asyncio.Task[Any]] = set()
"""Ingests whose client stopped reading: they finish all the same (the files are stored)."""


async def _ingest_lines(kb: Any, saved: list[Path], names: list[str], given: dict[str, Any]) -> AsyncIterator[str]:
    """NDJSON lines of an ingest's progress, then its report (or its error)."""
    loop = asyncio.get_running_loop()
    updates: asyncio.Queue[Any] = asyncio.Queue()

    def on_progress(update: Any) -> None:  # called on the loop, or on an ingest thread
        line = {"type": "progress", **jsonable_encoder(update)}
        try:
            running = asyncio.get_running_loop() is loop
        except RuntimeError:
            running = False
        if running:
            updates.put_nowait(line)
        else:
            loop.call_soon_threadsafe(updates.put_nowait, line)

    async def ingest() -> Any:
        return await kb.ingest([str(p) for p in saved], on_progress=on_progress, **given)

    task = asyncio.ensure_future(ingest())
    _INGESTS.add(task)
    task.add_done_callback(_INGESTS.discard)
    task.add_done_callback(lambda _: loop.call_soon(updates.put_nowait, None))
    while (line := await updates.get()) is not None:
        yield json.dumps(line, ensure_ascii=False) + "\n"
    try:
        report = task.result()
    except ReasonLoopError as exc:
        _forget(saved)
        yield json.dumps({"type": "error", "error": {"code": exc.code, "message": exc.message}}) + "\n"
        return
    except Exception as exc:
        _forget(saved)
        error = {"code": "kb.error", "message": f"the ingest failed: {exc}"}
        yield json.dumps({"type": "error", "error": error}, ensure_ascii=False) + "\n"
        return
    done = {"type": "done", "files": names, "results": _results(saved, report), "report": jsonable_encoder(report)}
    yield json.dumps(done, ensure_ascii=False) + "\n"


@router.get("/documents")
async def documents(request: Request, who: Annotated[Caller, Depends(principal)]) -> Any:
    """The tenant's documents."""
    kb = await _kb(request).get(who.tenant, who.reader)
    return jsonable_encoder(await kb_call(kb.documents))


@router.delete("/documents/{document}")
async def delete_document(document: str, request: Request, who: Annotated[Caller, Depends(principal)]) -> Any:
    """Delete a document by id or source; 404 when nothing matched."""
    kb = await _kb(request).get(who.tenant, who.reader)
    try:
        result = await kb_call(kb.delete, document)
    except KBError as exc:
        raise DocumentNotFound(exc.message, document=document) from exc
    if not result:
        raise DocumentNotFound(f"no document {document!r}", document=document)
    return {"deleted": jsonable_encoder(result)}


@router.put("/documents/{document}/readers")
async def set_readers(
    document: str,
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    readers: Annotated[
        list[str] | None,
        Body(embed=True, description="Users and groups ('alice', 'group:finance'); null: everyone in the tenant."),
    ],
) -> Any:
    """Change who may read a document (or every document under a folder) the caller may read;
    404 when there is none. The next search of every process follows."""
    kb = await _kb(request).get(who.tenant, who.reader)
    changed = await kb_call(kb.set_readers, document, readers)
    return {"changed": [{"id": d.id, "source": d.source, "readers": d.readers} for d in changed]}


@router.get("/stats")
async def stats(request: Request, who: Annotated[Caller, Depends(principal)]) -> Any:
    kb = await _kb(request).get(who.tenant, who.reader)
    return jsonable_encoder(await kb_call(kb.stats))


@router.get("/search")
async def search(
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    q: str = Query(min_length=1),
    top_k: int = Query(5, ge=1, le=100),
    rerank: bool | None = Query(None, description="false: skip the knowledge base's reranker; true: require one"),
    candidates: int | None = Query(None, ge=1, le=500, description="fused candidates the reranker orders"),
    mode: Literal["hybrid", "dense", "lexical"] = Query("hybrid", description="Fused, vectors only, or BM25 only."),
) -> Any:
    """Search the tenant's knowledge base."""
    if not q.strip():
        raise RequestInvalid("q: the query is empty", field="q")
    server_state(request).check_length(q, "q", "query")
    kb = await _kb(request).get(who.tenant, who.reader)
    options: dict[str, Any] = {k: v for k, v in {"rerank": rerank, "candidates": candidates}.items() if v is not None}
    if mode != "hybrid":
        options["mode"] = mode
    try:
        hits = await kb_call(kb.search, q, top_k, **options)
    except ConfigError as exc:  # rerank=true on a knowledge base without a reranker: the request's fault
        raise RequestInvalid(exc.message, field="rerank") from exc
    return jsonable_encoder(hits)
