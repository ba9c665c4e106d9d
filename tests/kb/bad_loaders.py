"""Loader plugins that misbehave, for the parsing workers' tests (run inside a worker)."""

from __future__ import annotations

import os
import signal
import time

from reasonloop.kb.ingest.loaders import LoadedDocument


def segfault(data: bytes, source: str, title: str, on_page) -> LoadedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("still alive")


def hang(data: bytes, source: str, title: str, on_page) -> LoadedDocument:
    time.sleep(3600)
    raise AssertionError("woke up")


def hog(data: bytes, source: str, title: str, on_page) -> LoadedDocument:
    """Holds more and more memory, touching it, until something stops it."""
    held = []
    while True:
        held.append(bytearray(64 * 1024 * 1024))


def spin(data: bytes, source: str, title: str, on_page) -> LoadedDocument:
    while True:
        pass


def plain(data: bytes, source: str, title: str, on_page) -> LoadedDocument:
    return LoadedDocument(source=source, title=title, text=data.decode("utf-8"))
