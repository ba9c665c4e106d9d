"""The sources one ingest reads: the files and URLs named and the files of the folders named, the
bytes of each, and who may read its documents.

:class:`IngestSources` turns what the caller named into the names sources are stored and reported
under, remembering for each file the path it is read by (:mod:`reasonloop.kb.ingest.names`) and
the folder it was found in (how far up a ``.readers`` sidecar is looked for). It is the part of an
ingest that looks at the file system and the network to find what there is; the pipeline
(:mod:`reasonloop.kb.ingest.pipeline`) parses, chunks and commits what it reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from reasonloop.kb.access import read_sidecar, readers_json
from reasonloop.kb.base import IngestReport
from reasonloop.kb.ingest.fetch import fetch_url, is_url
from reasonloop.kb.ingest.loaders import walk
from reasonloop.kb.ingest.names import path_of, source_name
from reasonloop.kb.ingest.reading import read_version

__all__ = ["IngestSources", "SourceBytes"]


class SourceBytes(NamedTuple):
    """One version of a source as read, with what its parser is told about it."""

    data: bytes
    content_type: str
    """The type the server declared (``""`` for a file)."""
    suffix: str
    """The suffix of its name or URL path, lower case (may be empty)."""
    title: str
    """The title its documents get when their format gives none."""
    mtime: float | None
    """The modification time of the version read (``None`` for a URL)."""


class IngestSources:
    """The sources of one ingest run.

    Args:
        own: The index's own folder, whose files are never ingested.
        report: The run's report: missing paths go to its ``failed``, what a folder walk left
            out to its ``skipped``.
        readers: The readers given for every document, as stored (``None``: from sidecars, or kept).
    """

    def __init__(self, own: Path, report: IngestReport, readers: str | None) -> None:
        self.own = own
        self.report = report
        self.readers = readers
        self._roots: dict[str, Path] = {}
        """A folder's file -> the folder ingested (how far up a ``.readers`` sidecar is looked for)."""
        self._paths: dict[str, str] = {}
        """Source name -> path, for files whose path is not valid UTF-8 (:mod:`reasonloop.kb.ingest.names`)."""

    def expand(self, sources: Sequence[str], include: Sequence[str] | None, exclude: Sequence[str] | None) -> list[str]:
        """The names of the files and URLs to read; missing paths go straight to ``failed``, and
        what a folder walk left out (symbolic link loops, links leading outside the folder) to
        ``skipped``."""
        items: list[str] = []
        for source in sources:
            if is_url(source):
                items.append(source)
                continue
            path = Path(source).expanduser()
            if path.is_dir():
                skipped: dict[str, str] = {}
                for found in walk(path, include, exclude, skipped):
                    real = found.resolve()
                    if self.own not in real.parents:  # never ingest the index's own files
                        items.append(self._name(str(real)))
                        self._roots[items[-1]] = path.resolve()
                for link, why in skipped.items():
                    self.report.skipped[source_name(link)] = why
            elif path.is_file():
                items.append(self._name(str(path.resolve())))
            else:
                self.report.failed[source_name(source)] = "no such file or folder"
        return list(dict.fromkeys(items))

    def _name(self, path: str) -> str:
        """The name ``path`` is stored and reported under (remembered, to read the file by)."""
        name = source_name(path)
        if name != path:
            self._paths[name] = path
        return name

    async def read(self, item: str, *, fetch_timeout_s: float, max_fetch_bytes: int) -> SourceBytes:
        """Fetch the URL or read one version of the file named ``item``.

        Raises:
            KBLoadError: it cannot be fetched or read (:func:`~reasonloop.kb.ingest.fetch.fetch_url`,
                :func:`~reasonloop.kb.ingest.reading.read_version`).
        """
        if is_url(item):
            data, ctype, suffix = await fetch_url(item, timeout_s=fetch_timeout_s, max_bytes=max_fetch_bytes)
            return SourceBytes(data, ctype, suffix, item.rstrip("/").rsplit("/", 1)[-1], None)
        data, mtime = await asyncio.to_thread(read_version, Path(self._paths.get(item, item)), item)
        return SourceBytes(data, "", Path(item).suffix.lower(), Path(item).stem, mtime)

    def access_of(self, item: str) -> str | None:
        """The readers of ``item``'s documents as stored: those given, else the nearest sidecar's
        (a local file), else ``None`` (kept as they are).

        Raises:
            RequestInvalid: the nearest sidecar cannot be read.
        """
        if self.readers is not None:
            return self.readers
        if is_url(item):
            return None
        folder = Path(path_of(self._paths.get(item, item))).parent
        found = read_sidecar(folder, self._roots.get(item, folder))
        return None if found is None else readers_json(found)
