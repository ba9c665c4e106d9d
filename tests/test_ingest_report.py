"""What ``reasonloop ingest`` says besides its progress bar: exit codes, the long-ingest warning,
the message of an interrupted ingest."""

from __future__ import annotations

import os
import re

import pytest

from reasonloop.cli import ingest_report, main
from reasonloop.cli.ingest_report import (
    exit_code,
    interrupted_message,
    long_ingest_warning,
    seconds_left,
    summary_line,
)
from reasonloop.kb.base import IngestProgress, IngestReport
from tests.environment import is_outside_setting


def test_exit_codes():
    assert exit_code(IngestReport(added=["a"], unchanged=["b"])) == 0
    assert exit_code(IngestReport()) == 0  # nothing asked that failed
    assert exit_code(IngestReport(added=["a"], failed={"b": "binary"})) == 3
    assert exit_code(IngestReport(unchanged=["a"], failed={"b": "binary"})) == 3
    assert exit_code(IngestReport(failed={"b": "no such file or folder"})) == 1


def test_the_estimate_waits_for_a_measured_rate_then_uses_it():
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=0)) is None
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=4, chunks_embedded=4, embed_seconds=1)) is None
    p = IngestProgress(chunks_total=1000, chunks_done=100, chunks_embedded=100, embed_seconds=10)
    assert seconds_left(p) == pytest.approx(90)
    # Chunks whose vectors came from the cache took no embedding: no rate is measured on them.
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=500, chunks_embedded=0)) is None


def test_a_huge_file_is_announced_with_its_estimate():
    # The reported case: 94,797 chunks at about 2 chunks/s, after the first batch.
    p = IngestProgress(chunks_total=94_797, chunks_done=64, chunks_embedded=64, embed_seconds=32, files_total=1)
    warning = long_ingest_warning(p)
    assert warning is not None
    assert "94,733 chunks still to embed" in warning and "2.0 chunks/s" in warning and "13.2 hours" in warning
    assert "Ctrl-C" in warning
    short = IngestProgress(chunks_total=200, chunks_done=64, chunks_embedded=64, embed_seconds=32)
    assert long_ingest_warning(short) is None  # 4 min
    longer = IngestProgress(chunks_total=2000, chunks_done=64, chunks_embedded=64, embed_seconds=32)
    assert "minutes" in long_ingest_warning(longer)


def _resumed_feed(total: int, cached: int, step: int, embed_s: float, lookup_s: float):
    """The progress an ingest reports when the first ``cached`` of ``total`` chunks have vectors in
    the cache (what an interrupted run left) and each of the others takes ``embed_s`` seconds, on a
    fake clock: ``(progress, seconds really left)`` after each step of ``step`` chunks. As the
    ingest measures it, a step that embedded anything counts its cache lookup (``lookup_s``) too,
    a step served wholly from the cache counts nothing."""
    p = IngestProgress(files_total=1, chunks_total=total)
    while p.chunks_done < total:
        n = min(step, total - p.chunks_done)
        hits = max(0, min(n, cached - p.chunks_done))
        p.chunks_done += n
        p.chunks_embedded += n - hits
        if n > hits:
            p.embed_seconds += (n - hits) * embed_s + lookup_s
        yield p.model_copy(), (total - max(p.chunks_done, cached)) * embed_s


def test_the_estimate_after_a_resume_counts_the_work_left_at_the_rate_of_work_done():
    # A 50 MB file: 100,000 chunks at 0.1 s each; the interrupted run embedded 60,000 of them.
    feed = list(_resumed_feed(100_000, 60_000, 64, 0.1, 0.01))
    estimates = [(seconds_left(p), truth) for p, truth in feed]
    assert all(left is None for left, _ in estimates[: 60_000 // 64])  # nothing embedded yet: no guess
    measured = [(left, truth) for left, truth in estimates if left is not None]
    assert measured and measured[0][1] > 3900  # an estimate comes as soon as embedding starts
    for left, truth in measured:
        assert left == pytest.approx(truth, rel=0.02, abs=1), (left, truth)


def test_the_long_ingest_warning_comes_on_a_resume_with_the_remaining_work():
    feed = list(_resumed_feed(100_000, 60_000, 64, 0.1, 0.01))
    first = next(p for p, _ in feed if long_ingest_warning(p) is not None)
    assert first.chunks_embedded <= 64  # at the first measured step, not near the end
    warning = " ".join(long_ingest_warning(first).split())
    assert "39,968 chunks still to embed (60,000 more were embedded before and came from the cache)" in warning
    assert "at the 10.0 chunks/s measured so far" in warning and "about 67 minutes" in warning


def test_a_fresh_ingest_estimates_as_before():
    feed = list(_resumed_feed(10_000, 0, 64, 0.1, 0.0))
    for p, truth in feed:
        if p.chunks_done >= 64:
            assert seconds_left(p) == pytest.approx(truth, rel=1e-6, abs=1e-6)
    assert "from the cache" not in long_ingest_warning(feed[0][0])


def test_the_summary_counts_failures_under_the_word_each_one_is_listed_with():
    line = summary_line(IngestReport(added=["a"], failed={"b": "binary", "c": "no such file or folder"}))
    assert "added 1" in line and "failed 2" in line


def test_interrupted_messages():
    assert "nothing was ingested" in interrupted_message(None)
    p = IngestProgress(files_total=200, files_committed=47, first_pending="/d/f48.txt")
    assert interrupted_message(p).startswith("interrupted: 47 of 200 files done")
    assert "not ingested: /d/f48.txt and 152 more." in interrupted_message(p)
    one = IngestProgress(files_total=1, files_committed=0, first_pending="/d/big.txt")
    assert "not ingested: /d/big.txt." in interrupted_message(one)


@pytest.mark.integration
def test_ingest_warns_before_most_of_the_work_when_it_will_be_long(tmp_path, monkeypatch, capsys):
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reasonloop.toml").write_text("[kb.options]\nchunk_tokens = 16\nchunk_overlap = 0\n")
    sentences = " ".join(f"Sentence {i} says one small thing." for i in range(400))
    (tmp_path / "big.txt").write_text(sentences, encoding="utf-8")
    monkeypatch.setattr(ingest_report, "LONG_INGEST_S", 0.001)  # this machine's rate makes anything long
    try:
        main(["ingest", "big.txt"])
    except SystemExit as exc:
        assert not exc.code
    out, err = capsys.readouterr()
    flat = " ".join(err.split())
    assert flat.count("warning") == 1, err
    found = re.search(r"warning ([\d,]+) chunks still to embed; at the ([\d.,]+) chunks/s measured so far", flat)
    assert found, err
    total = int(re.search(r"; (\d+) chunks \(", out).group(1))
    assert int(found.group(1).replace(",", "")) > total / 2  # said before most of the work
