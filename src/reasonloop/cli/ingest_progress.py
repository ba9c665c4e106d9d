"""The columns of ``reasonloop ingest``'s progress bar (rich is loaded by the ingest that shows them)."""

from __future__ import annotations

from rich.progress import BarColumn, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

from reasonloop.cli.ingest_report import seconds_left
from reasonloop.kb.base import IngestProgress

__all__ = ["ingest_columns"]


class _RateETA(ProgressColumn):
    """Embedding rate (chunks/s actually embedded) and the time left for the known chunks."""

    def render(self, task: Task) -> Text:
        p: IngestProgress | None = task.fields.get("ingest")
        if p is None or p.embed_seconds <= 0:
            return Text("")
        left = seconds_left(p)
        eta = f"ETA {left:,.0f}s" if left else ""
        embedded = p.chunks_embedded / p.embed_seconds
        return Text(f"{embedded:,.1f} emb/s {eta}", style="progress.data.speed")


def ingest_columns() -> tuple[ProgressColumn, ...]:
    """Description, bar, files, chunks, embedding rate with the time left, elapsed time."""
    return (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("files {task.fields[files]}"),
        TextColumn("chunks {task.completed:,.0f}/{task.total:,.0f}"),
        _RateETA(),
        TimeElapsedColumn(),
    )
