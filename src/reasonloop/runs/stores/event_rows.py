"""Stamped events as run stores record them, held column by column.

A row is ``(run_id, seq, payload)``, the payload being the event's JSON. Under load, thousands
of rows wait at once for the store (gathered for a transaction, queued for the writer thread),
and a tuple per row is an object the garbage collector tracks: each young collection walks
every one of them, and thousands more of them is one more collection, whose pause every open
stream waits through. Three lists of strings and numbers hold the same rows with no object
per row that the collector sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

__all__ = ["EventRows"]


class EventRows:
    """Rows ``(run_id, seq, payload)`` in order, as three lists of the same length."""

    __slots__ = ("payloads", "run_ids", "seqs")

    def __init__(self) -> None:
        self.run_ids: list[str] = []
        self.seqs: list[int] = []
        self.payloads: list[str] = []

    @classmethod
    def of(cls, rows: Iterable[tuple[str, int, str]]) -> EventRows:
        out = cls()
        for run_id, seq, payload in rows:
            out.append(run_id, seq, payload)
        return out

    def append(self, run_id: str, seq: int, payload: str) -> None:
        self.run_ids.append(run_id)
        self.seqs.append(seq)
        self.payloads.append(payload)

    def extend(self, other: EventRows) -> None:
        self.run_ids += other.run_ids
        self.seqs += other.seqs
        self.payloads += other.payloads

    def __len__(self) -> int:
        return len(self.run_ids)

    def __iter__(self) -> Iterator[tuple[str, int, str]]:
        """The rows as tuples, made as they are read."""
        return zip(self.run_ids, self.seqs, self.payloads, strict=True)

    def __repr__(self) -> str:
        return f"EventRows({len(self)} rows)"
