"""Parsing files where they cannot hurt: worker processes with a memory, CPU and time bound.

Each worker is a fresh ``python -m reasonloop.kb.ingest.parse_worker`` process (not a fork: the
ingesting process has threads, an embedder and maybe a server inside it) that sets its own
``RLIMIT_AS`` (``[kb.limits] memory_mb``), ``RLIMIT_CPU`` (``cpu_s`` per file) and no core
files, then parses the files it is sent, one at a time, with :func:`~reasonloop.kb.ingest.loaders.load_bytes`.
The parent kills a worker that takes longer than ``timeout_s`` on a file. A worker that dies
(a segfault in a native parser, memory exhausted, CPU time out, killed) or times out costs
that file only: the file fails with the reason in our words and a fresh worker takes the next.
A worker is also retired after ``files_per_worker`` files, so that nothing one file left behind
in it (fragmented memory, a parser's caches) weighs on the files after it.

Results come back as JSON, not pickles: a worker runs parsers on hostile input, and what it
says must not be able to run code in the parent.

Plain text, Markdown, CSV, JSON and JSONL are parsed in the calling process: their parsers are
Python's own (no native code to crash), linear in time, and their memory is a small multiple
of the file's bytes, which the caller already holds. Everything else (PDF, office files,
e-books, HTML, images) goes to a worker. Loader plugins (``loaders``: suffix ->
``package.module:function``) always run in a worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.limits import ParseLimits, failure_reason
from reasonloop.kb.ingest.loaders import LoadedDocument, Page, PageFn, RecordError, kind_of, load_bytes

__all__ = ["IN_PROCESS_KINDS", "ParsePool", "documents_from_json", "documents_to_json"]

IN_PROCESS_KINDS = frozenset({"txt", "md", "csv", "json", "jsonl"})
"""Formats parsed in the calling process (see the module's doc for why that is safe)."""

_SIGNALS = {
    signal.SIGSEGV: "the parser crashed (signal 11)",
    signal.SIGBUS: "the parser crashed (signal 7)",
    signal.SIGABRT: "the parser aborted (signal 6)",
}


def documents_to_json(docs: list[LoadedDocument | RecordError]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, RecordError):
            out.append({"error": True, "source": d.source, "reason": d.reason})
            continue
        out.append(
            {
                "source": d.source,
                "title": d.title,
                "text": d.text,
                "pages": None if d.pages is None else [[p.number, p.text] for p in d.pages],
                "metadata": d.metadata,
                "doc_id": d.doc_id,
                "warnings": d.warnings,
            }
        )
    return out


def documents_from_json(items: list[dict[str, Any]]) -> list[LoadedDocument | RecordError]:
    out: list[LoadedDocument | RecordError] = []
    for d in items:
        if d.get("error"):
            out.append(RecordError(str(d["source"]), str(d["reason"])))
            continue
        pages = d.get("pages")
        out.append(
            LoadedDocument(
                source=str(d["source"]),
                title=str(d["title"]),
                text=str(d["text"]),
                pages=None if pages is None else [Page(int(n), str(t)) for n, t in pages],
                metadata=dict(d.get("metadata") or {}),
                doc_id=None if d.get("doc_id") is None else str(d["doc_id"]),
                warnings=[str(w) for w in d.get("warnings") or []],
            )
        )
    return out


@dataclass(eq=False)
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection
    files: int = 0
    cpu_before: float = 0.0

    maxrss_kb: int = 0
    """Peak resident memory of the process, once it has ended."""

    def wait(self, timeout: float) -> int | None:
        """The exit code (negative: the signal) once the process has ended, ``None`` if it is
        still running after ``timeout`` seconds. Reaped here to keep its resource usage."""
        deadline = time.monotonic() + timeout
        while self.process.returncode is None:
            try:
                pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            except ChildProcessError:
                return self.process.poll()
            if pid == self.process.pid:
                self.process.returncode = os.waitstatus_to_exitcode(status)
                self.maxrss_kb = int(usage.ru_maxrss)
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)
        return self.process.returncode

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.wait(2.0) is None:  # it leaves by itself once its input is closed
            self.process.kill()
            self.wait(30.0)


@dataclass
class ParsePool:
    """Worker processes that parse files under :class:`ParseLimits`; thread-safe, one file per
    worker at a time. Use :meth:`parse` from worker threads; :meth:`close` at the end."""

    limits: ParseLimits = field(default_factory=ParseLimits)
    loaders: Mapping[str, str] = field(default_factory=dict)
    """Loader plugins: a suffix (``.ext``) -> ``package.module:function`` called in the worker as
    ``function(data, source, title, on_page)`` and returning a document or a list of them."""
    in_process: bool = True
    """Parse :data:`IN_PROCESS_KINDS` in the calling process (``False``: every file in a worker)."""
    _idle: list[_Worker] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _all: set[_Worker] = field(default_factory=set)
    _closed: bool = False
    started: int = 0
    """Workers started so far (for tests and benchmarks)."""
    children_maxrss_kb: int = 0
    """The largest peak resident memory of a worker that has ended, in KB."""

    @property
    def size(self) -> int:
        if self.limits.workers:
            return self.limits.workers
        return max(1, min(4, os.cpu_count() or 1))

    def parse(
        self,
        data: bytes,
        source: str,
        *,
        suffix: str,
        default_title: str = "",
        content_type: str = "",
        on_page: PageFn | None = None,
    ) -> list[LoadedDocument | RecordError]:
        """The documents in ``data``, parsed where the limits hold.

        Raises:
            KBLoadError: the file cannot be read (whatever went wrong, in our words).
        """
        suffix = suffix.lower()
        if suffix not in self.loaders and self.in_process and kind_of(suffix, content_type) in IN_PROCESS_KINDS:
            try:
                return load_bytes(data, source, suffix=suffix, default_title=default_title, content_type=content_type)
            except KBLoadError:
                raise
            except Exception as exc:
                raise KBLoadError(f"{source}: {failure_reason(exc, self.limits)}", source=source) from exc
        job = {
            "data_len": len(data),
            "source": source,
            "suffix": suffix,
            "title": default_title,
            "content_type": content_type,
            "loader": self.loaders.get(suffix),
        }
        worker = self._take()
        try:
            result = self._run(worker, job, data, on_page)
        except BaseException:
            self._retire(worker)
            raise
        if result[0] == "failed":
            self._retire(worker)
        else:
            self._give_back(worker)
        if result[0] == "ok":
            return documents_from_json(result[1])
        raise KBLoadError(f"{source}: {result[1]}", source=source)

    # -- one file in one worker -----------------------------------------------------------------------
    def _run(self, worker: _Worker, job: dict[str, Any], data: bytes, on_page: PageFn | None) -> tuple[str, Any]:
        """``("ok", documents)``, ``("refused", reason)`` (the worker is sound) or ``("failed", reason)``."""
        deadline = time.monotonic() + self.limits.timeout_s
        try:
            worker.conn.send_bytes(json.dumps(job).encode())
            worker.conn.send_bytes(data)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not worker.conn.poll(left):
                    worker.process.kill()
                    return "failed", f"timed out after {self.limits.timeout_s:g} s ([kb.limits] timeout_s)"
                message = json.loads(worker.conn.recv_bytes())
                kind = message.get("type")
                if kind == "page" and on_page is not None:
                    on_page(int(message["done"]), int(message["total"]))
                elif kind == "done":
                    return "ok", message["documents"]
                elif kind == "failed":
                    reason = str(message["reason"]).removeprefix(f"{job['source']}: ")
                    return ("refused" if message.get("sound") else "failed"), reason
        except (EOFError, OSError, ValueError):
            return "failed", self._death(worker)

    def _death(self, worker: _Worker) -> str:
        """Why a worker stopped answering."""
        code = worker.wait(10.0)
        if code is None:
            worker.process.kill()
            return "the parser stopped answering"
        if code < 0:
            sig = -code
            if sig == signal.SIGXCPU:
                return f"used more than {self.limits.cpu_s} s of CPU time ([kb.limits] cpu_s)"
            if sig == signal.SIGKILL:
                return f"the parser was killed (signal 9; over {self.limits.memory_mb} MB of memory?)"
            return _SIGNALS.get(signal.Signals(sig), f"the parser was stopped (signal {sig})")
        return f"the parser exited unexpectedly (code {code})"

    # -- the workers ----------------------------------------------------------------------------------
    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise RuntimeError("the parse pool is closed")
            if self._idle:
                return self._idle.pop()
        return self._start()

    def _give_back(self, worker: _Worker) -> None:
        worker.files += 1
        if worker.files >= self.limits.files_per_worker:
            self._retire(worker)
            return
        with self._lock:
            if not self._closed and len(self._idle) < self.size:
                self._idle.append(worker)
                return
        self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        worker.stop()
        self._reap(worker)
        with self._lock:
            self._all.discard(worker)

    def _reap(self, worker: _Worker) -> None:
        self.children_maxrss_kb = max(self.children_maxrss_kb, worker.maxrss_kb)

    def _start(self) -> _Worker:
        parent_end, child_end = os.pipe(), os.pipe()
        # parent writes parent_end[1] -> child reads parent_end[0]; child writes child_end[1].
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        limits = self.limits.model_dump()
        process = subprocess.Popen(
            [sys.executable, "-m", "reasonloop.kb.ingest.parse_worker", str(parent_end[0]), str(child_end[1])],
            pass_fds=(parent_end[0], child_end[1]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env={**env, "REASONLOOP_PARSE_LIMITS": json.dumps(limits)},
            close_fds=True,
        )
        os.close(parent_end[0])
        os.close(child_end[1])
        conn = _Duplex(read_fd=child_end[0], write_fd=parent_end[1])
        worker = _Worker(process, conn)  # type: ignore[arg-type]
        with self._lock:
            self.started += 1
            self._all.add(worker)
        return worker

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._idle.clear()
        for worker in workers:
            self._retire(worker)

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Duplex:
    """Two one-way pipe ends as one connection (``send_bytes``, ``recv_bytes``, ``poll``)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._reader = Connection(read_fd, writable=False)
        self._writer = Connection(write_fd, readable=False)

    def send_bytes(self, data: bytes) -> None:
        self._writer.send_bytes(data)

    def recv_bytes(self) -> bytes:
        return self._reader.recv_bytes()

    def poll(self, timeout: float) -> bool:
        return self._reader.poll(timeout)

    def close(self) -> None:
        for end in (self._writer, self._reader):
            with contextlib.suppress(OSError):
                end.close()
