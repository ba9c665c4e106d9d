"""What ``reasonloop ingest`` tells the user beyond its progress bar: its exit code, the time a
long ingest will take (said before most of the work), its summary, and what an interrupted one
committed.

The estimate counts the chunks still to do at the rate the embedder showed in this run: chunks
whose vectors came from the cache (an ingest resumed after an interruption reuses everything the
stopped one embedded) are work skipped, not work done, so they count in neither."""

from __future__ import annotations

from reasonloop.kb.base import IngestProgress, IngestReport

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "FAILED",
    "LONG_INGEST_S",
    "embedding_rate",
    "exit_code",
    "interrupted_message",
    "long_ingest_warning",
    "seconds_left",
    "summary_line",
]

EXIT_OK = 0
"""Every source was ingested, or was unchanged."""
EXIT_FAILED = 1
"""Nothing could be ingested: every source failed or does not exist (or the command failed)."""
EXIT_PARTIAL = 3
"""Some sources failed or do not exist; the others were ingested."""
EXIT_INTERRUPTED = 130
"""Stopped with Ctrl-C; what was committed before stays."""

FAILED = "failed"
"""The word for a source that could not be ingested, in the summary and on each such source's line."""

LONG_INGEST_S = 600.0
"""An ingest expected to take longer than this is announced with its estimate."""
MIN_MEASURED_CHUNKS = 8
"""Chunks actually embedded (cache hits excluded) before the embedding rate is trusted for an estimate."""


def exit_code(report: IngestReport) -> int:
    """:data:`EXIT_OK`, :data:`EXIT_PARTIAL` or :data:`EXIT_FAILED` for a finished ingest."""
    if not report.failed:
        return EXIT_OK
    if report.added or report.updated or report.unchanged:
        return EXIT_PARTIAL
    return EXIT_FAILED


def embedding_rate(p: IngestProgress) -> float | None:
    """Chunks embedded per second in this run, cache hits excluded (``None`` before there is one)."""
    if p.chunks_embedded < MIN_MEASURED_CHUNKS or p.embed_seconds <= 0:
        return None
    return p.chunks_embedded / p.embed_seconds


def seconds_left(p: IngestProgress) -> float | None:
    """Time the chunks known so far and not done yet still need, at the rate measured on the chunks
    this run embedded (``None`` before there is one). Chunks taken from the cache are neither work
    left nor work that measured the rate."""
    rate = embedding_rate(p)
    if rate is None:
        return None
    return max(p.chunks_total - p.chunks_done, 0) / rate


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def long_ingest_warning(p: IngestProgress, limit_s: float | None = None) -> str | None:
    """A warning with the estimate when the work known so far takes longer than ``limit_s``
    (default :data:`LONG_INGEST_S`), else ``None``."""
    left = seconds_left(p)
    rate = embedding_rate(p)
    if left is None or rate is None or left < (LONG_INGEST_S if limit_s is None else limit_s):
        return None
    reused = p.chunks_done - p.chunks_embedded
    since = f" ({reused:,} more were embedded before and came from the cache)" if reused > 0 else ""
    return (
        f"{p.chunks_total - p.chunks_done:,} chunks still to embed{since}; at the {rate:,.1f} chunks/s measured "
        f"so far that takes about {_duration(left)}. Ctrl-C stops it: documents committed by then stay "
        "searchable, and the vectors already computed are reused by the next ingest."
    )


def summary_line(report: IngestReport) -> str:
    """The one-line account of a finished ingest; its :data:`FAILED` count is the number of sources
    listed after it under that same word."""
    return (
        f"added {len(report.added)}, updated {len(report.updated)}, unchanged {len(report.unchanged)}, "
        f"deleted {len(report.deleted)}, {FAILED} {len(report.failed)}; "
        f"{report.chunks_added} chunks ({report.chunks_embedded} embedded) in {report.seconds:.1f}s"
    )


def interrupted_message(p: IngestProgress | None) -> str:
    """What an ingest stopped with Ctrl-C leaves: which sources are in, which are not."""
    if p is None or p.files_total == 0:
        return "interrupted before any file was read: nothing was ingested"
    left = p.files_total - p.files_committed
    done = f"{p.files_committed} of {p.files_total} files done (committed, unchanged or failed)"
    if left <= 0:
        return f"interrupted: {done}; nothing was left to ingest"
    more = f" and {left - 1} more" if left > 1 else ""
    first = p.first_pending or "the rest"
    return (
        f"interrupted: {done}; not ingested: {first}{more}. "
        "Run the same command again to ingest them (committed files are skipped)."
    )
