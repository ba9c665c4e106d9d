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
