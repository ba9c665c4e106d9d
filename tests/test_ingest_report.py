"""What ``reasonloop ingest`` says besides its progress bar: exit codes, the long-ingest warning,
the message of an interrupted ingest."""

from __future__ import annotations

import os
import re

import pytest

from reasonloop.cli import ingest_report, main
from reasonloop.cli.ingest_report import exit_code, interrupted_message, long_ingest_warning, seconds_left
from reasonloop.kb.base import IngestProgress, IngestReport


def test_exit_codes():
    assert exit_code(IngestReport(added=["a"], unchanged=["b"])) == 0
    assert exit_code(IngestReport()) == 0  # nothing asked that failed
    assert exit_code(IngestReport(added=["a"], failed={"b": "binary"})) == 3
    assert exit_code(IngestReport(unchanged=["a"], failed={"b": "binary"})) == 3
    assert exit_code(IngestReport(failed={"b": "no such file or folder"})) == 1


def test_the_estimate_waits_for_a_measured_rate_then_uses_it():
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=0)) is None
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=4, embed_seconds=1)) is None
    assert seconds_left(IngestProgress(chunks_total=1000, chunks_done=100, embed_seconds=10)) == pytest.approx(90)


def test_a_huge_file_is_announced_with_its_estimate():
    # The reported case: 94,797 chunks at about 2 chunks/s, after the first batch.
    p = IngestProgress(chunks_total=94_797, chunks_done=64, embed_seconds=32, files_total=1)
    warning = long_ingest_warning(p)
    assert warning is not None
    assert "94,733 chunks still to embed" in warning and "2.0 chunks/s" in warning and "13.2 hours" in warning
    assert "Ctrl-C" in warning
    assert long_ingest_warning(IngestProgress(chunks_total=200, chunks_done=64, embed_seconds=32)) is None  # 4 min
    assert "minutes" in long_ingest_warning(IngestProgress(chunks_total=2000, chunks_done=64, embed_seconds=32))


def test_interrupted_messages():
    assert "nothing was ingested" in interrupted_message(None)
    p = IngestProgress(files_total=200, files_committed=47, first_pending="/d/f48.txt")
    assert interrupted_message(p).startswith("interrupted: 47 of 200 files done")
    assert "not ingested: /d/f48.txt and 152 more." in interrupted_message(p)
    one = IngestProgress(files_total=1, files_committed=0, first_pending="/d/big.txt")
    assert "not ingested: /d/big.txt." in interrupted_message(one)


def test_ingest_warns_before_most_of_the_work_when_it_will_be_long(tmp_path, monkeypatch, capsys):
    for name in list(os.environ):
        if name.startswith("REASONLOOP_"):
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
