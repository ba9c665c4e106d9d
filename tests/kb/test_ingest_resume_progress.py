"""The progress a resumed ingest reports, measured on a fake clock: an embedder that takes a known
time per text, with the vectors of the first part of the file in the cache (what an interrupted
ingest leaves), so the estimate can be checked against the time that really was left."""

from __future__ import annotations

import types

from reasonloop.cli.ingest_report import long_ingest_warning, seconds_left
from reasonloop.kb.ingest import pipeline as ingest_module

from .helpers import HashEmbedder

SECONDS_PER_TEXT = 0.5


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


class _TimedEmbedder(HashEmbedder):
    """Embeds as :class:`HashEmbedder`, taking :data:`SECONDS_PER_TEXT` of the fake clock per text."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock = clock

    async def embed_passages(self, texts):
        self.clock.now += SECONDS_PER_TEXT * len(texts)
        return await super().embed_passages(texts)


def _sentences(count: int) -> str:
    return " ".join(f"Sentence {i} says one small thing about item {i * 7}." for i in range(count))


async def test_a_resumed_ingest_estimates_the_time_really_left(make_kb, tmp_path, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(ingest_module, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    embedder = _TimedEmbedder(clock)
    big = tmp_path / "big.txt"
    big.write_text(_sentences(150), encoding="utf-8")
    kb = make_kb(emb=embedder, chunk_tokens=16, chunk_overlap=0)
    first = await kb.ingest(str(big))
    assert first.chunks_embedded > 50  # the vectors the interrupted run left in the cache

    big.write_text(_sentences(300), encoding="utf-8")  # the same start, then the part never embedded
    seen: list[tuple[object, float]] = []
    report = await kb.ingest(str(big), on_progress=lambda p: seen.append((p, clock.now)))
    await kb.close()
    end = clock.now
    assert report.chunks_added > 2 * first.chunks_embedded - 4 and report.chunks_embedded < report.chunks_added

    measured = [(seconds_left(p), end - now, p) for p, now in seen if seconds_left(p) is not None]
    assert measured, "no estimate"
    # The first estimate comes early, and every one is the time that was left to within a step.
    assert measured[0][1] > 0.8 * report.chunks_embedded * SECONDS_PER_TEXT
    for left, truth, p in measured:
        assert abs(left - truth) <= 32 * SECONDS_PER_TEXT, (left, truth, p)
    # Told as soon as there is an estimate, with the chunks really left.
    limit = 0.8 * report.chunks_embedded * SECONDS_PER_TEXT
    warned = next(p for p, _ in seen if long_ingest_warning(p, limit) is not None)
    assert warned.chunks_embedded < 40
    assert "came from the cache" in long_ingest_warning(warned, limit)
