"""`reasonloop eval` on bad input: one clear line, nothing run."""

from __future__ import annotations

import json

from tests.cli_run import run_cli


def test_missing_field_is_named_with_file_and_line(tmp_path, capsys) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "a?", "answers": ["x"]}) + "\n" + json.dumps({"answers": ["y"]}) + "\n")
    code, _, err = run_cli(capsys, "eval", "qa", str(data), "--llm", "scripted:", "--work", str(tmp_path / "w"))
    assert code == 1
    assert "[eval.bad_data]" in err and f"{data}:2" in err and "'question'" in err
    assert not (tmp_path / "w").exists()


def test_unknown_strategy_is_refused_before_any_work(tmp_path, capsys) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "a?", "answers": ["x"]}) + "\n")
    code, _, err = run_cli(capsys, "eval", "qa", str(data), "--reasoning", "qa,nope", "--work", str(tmp_path / "w"))
    assert code == 1
    assert "nope" in err and "plugin.not_found" in err
    assert not (tmp_path / "w").exists()


def test_unknown_retrieval_mode(tmp_path, capsys) -> None:
    code, _, err = run_cli(capsys, "eval", "retrieval", str(tmp_path), "--mode", "dense,fuzzy")
    assert code == 1 and "fuzzy" in err


def test_a_finished_evaluation_prints_its_table_or_json_and_writes_its_html(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "lyon", "title": "Lyon", "text": "Lyon is a city in France."}) + "\n")
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "Where is Lyon?", "answers": ["France"], "documents": ["lyon"]}) + "\n")
    argv = ["eval", "qa", str(data), "--corpus", str(corpus), "--ideal", "--work", str(tmp_path / "w")]
    code, out, _ = run_cli(capsys, *argv, "--json", "--html", str(tmp_path / "r.html"))
    assert code == 0
    summary = json.loads(out)
    assert [s["strategy"] for s in summary["strategies"]] == ["qa"] and summary["strategies"][0]["questions"] == 1
    assert "<img" in (tmp_path / "r.html").read_text(encoding="utf-8")
    code, out, _ = run_cli(capsys, *argv)  # resumed: the same figures as a table
    assert code == 0
    assert "q: 1 questions, model scripted:ideal" in " ".join(out.split())
    assert "| strategy |" in out and "| qa " in out
