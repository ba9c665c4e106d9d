"""A parsing worker process (started by :class:`reasonloop.kb.ingest.parsing.ParsePool`).

``python -m reasonloop.kb.ingest.parse_worker READ_FD WRITE_FD``, with the limits as JSON in
``REASONLOOP_PARSE_LIMITS``. It bounds itself (address space, CPU time per file, no core
files, Pillow's pixel cap), then answers each job (a JSON header and the file's bytes) with
``page`` lines and one ``done`` (the documents, as JSON) or ``failed`` (the reason). It ends
when its input is closed.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import threading
import time
import warnings
from multiprocessing.connection import Connection
from typing import Any


def _bound(limits: Any) -> None:
    memory = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        from PIL import Image

        # Any image a parser decodes (one inside a PDF, an office file, ...) is held to the cap:
        # past it Pillow warns, and the warning is made an error.
        Image.MAX_IMAGE_PIXELS = limits.max_pixels
        warnings.simplefilter("error", Image.DecompressionBombWarning)
    except ImportError:
        pass


def _cpu_for_next_file(limits: Any) -> None:
    """``RLIMIT_CPU`` counts the whole process: allow what it used so far plus one file's share."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + limits.cpu_s
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _orphaned(parent: int) -> None:
    """End the process when its parent has gone (a hung parser must not outlive the ingest)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _plugin(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str]) -> int:
    from reasonloop.errors import KBLoadError
    from reasonloop.kb.ingest.limits import ParseLimits, failure_reason
    from reasonloop.kb.ingest.loaders import LoadedDocument, load_bytes
    from reasonloop.kb.ingest.parsing import documents_to_json

    reader = Connection(int(argv[0]), writable=False)
    writer = Connection(int(argv[1]), readable=False)
    limits = ParseLimits.model_validate_json(os.environ.get("REASONLOOP_PARSE_LIMITS") or "{}")
    _bound(limits)
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        writer.send_bytes(json.dumps(message, ensure_ascii=False).encode())

    def on_page(done: int, total: int) -> None:
        send({"type": "page", "done": done, "total": total})

    while True:
        try:
            job = json.loads(reader.recv_bytes())
            data = reader.recv_bytes()
        except EOFError:
            return 0
        _cpu_for_next_file(limits)
        source = job["source"]
        try:
            if job.get("loader"):
                loaded = _plugin(job["loader"])(data, source, job["title"], on_page)
                docs = loaded if isinstance(loaded, list) else [loaded]
                if not any(isinstance(d, LoadedDocument) and d.text.strip() for d in docs):
                    raise KBLoadError(f"{source}: no text found", source=source)
            else:
                docs = load_bytes(
                    data,
                    source,
                    suffix=job["suffix"],
                    default_title=job["title"],
                    content_type=job["content_type"],
                    on_page=on_page,
                    limits=limits,
                )
            payload = {"type": "done", "documents": documents_to_json(docs)}
        except Exception as exc:  # every failure is this file's, said in our words
            data = b""
            # A parser's own refusal leaves the worker sound; anything else may not have.
            payload = {"type": "failed", "reason": failure_reason(exc, limits), "sound": isinstance(exc, KBLoadError)}
        send(payload)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
