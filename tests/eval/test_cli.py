"""`reasonloop eval` on bad input: one clear line, nothing run."""

from __future__ import annotations

import json

import pytest

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


@pytest.mark.integration
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


def _ideal_run(tmp_path, capsys, out) -> list[str]:
    """An --ideal evaluation of four questions into ``out``; returns its command line."""
    corpus = tmp_path / "corpus.jsonl"
    docs = [("lyon", "Lyon is a city in France."), ("baikal", "Lake Baikal is in Russia."), ("nile", "The Nile flows through Egypt."), ("fuji", "Mount Fuji is in Japan.")]  # fmt: skip
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    data = tmp_path / "q.jsonl"
    questions = [("Where is Lyon?", "France"), ("Where is Lake Baikal?", "Russia"), ("Where does the Nile flow?", "Egypt"), ("Where is Mount Fuji?", "Japan")]  # fmt: skip
    data.write_text("".join(json.dumps({"question": q, "answers": [a]}) + "\n" for q, a in questions))
    argv = ["eval", "qa", str(data), "--corpus", str(corpus), "--ideal", "--work", str(tmp_path / "w")]
    code, _, _ = run_cli(capsys, *argv, "--out", str(out))
    assert code == 0
    return argv


def _spoil(folder, keep: int) -> None:
    """Make every answer after the first ``keep`` wrong, as a worse run would have written them."""
    path = folder / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows[keep:]:
        row["prediction"] = "Atlantis [1]"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.integration
def test_fail_if_worse_exits_4_on_a_drop_beyond_the_interval_and_0_otherwise(tmp_path, capsys) -> None:
    import shutil

    good, bad = tmp_path / "good", tmp_path / "bad"
    argv = _ideal_run(tmp_path, capsys, good)
    shutil.copytree(good, bad)
    _spoil(bad, keep=0)
    # the worse run (resumed from its folder) against the good one: F1 100 -> 0 on every question
    code, out, err = run_cli(capsys, *argv, "--out", str(bad), "--baseline", str(good), "--fail-if-worse")
    assert code == 4
    assert "- WORSE qa \u2212 baseline qa: \u2212100.0 F1 [\u2212100.0, \u2212100.0] over 4 questions: worse" in out
    assert "worse than the baseline" in err
    # the same run against itself, and the good run against the worse one: nothing worse
    code, out, _ = run_cli(capsys, *argv, "--out", str(good), "--baseline", str(good), "--fail-if-worse")
    assert code == 0 and "+0.0 F1 [+0.0, +0.0] over 4 questions: not significant" in out
    code, out, _ = run_cli(
        capsys, *argv, "--out", str(good), "--baseline", str(bad / "results.jsonl"), "--fail-if-worse"
    )
    assert code == 0 and "WORSE" not in out and ": better" in out
    # without --fail-if-worse a worse figure is reported and the exit status stays 0
    code, out, _ = run_cli(capsys, *argv, "--out", str(bad), "--baseline", str(good))
    assert code == 0 and "WORSE" in out
    # in JSON the verdicts are part of the summary
    code, out, _ = run_cli(capsys, *argv, "--out", str(bad), "--baseline", str(good), "--json")
    verdicts = {(d["figure"], d["worse"]) for d in json.loads(out)["baseline"]}
    assert ("f1", True) in verdicts and ("wrong", True) in verdicts


@pytest.mark.integration
def test_a_drop_within_the_interval_does_not_fail(tmp_path, capsys) -> None:
    import shutil

    good, bad = tmp_path / "good", tmp_path / "bad"
    argv = _ideal_run(tmp_path, capsys, good)
    shutil.copytree(good, bad)
    _spoil(bad, keep=3)  # one question of four: a drop of 25 points that four questions cannot tell from chance
    code, out, _ = run_cli(capsys, *argv, "--out", str(bad), "--baseline", str(good), "--fail-if-worse")
    assert code == 0 and "\u221225.0 F1 [\u2212" in out and "not significant" in out


def test_baseline_options_are_checked_before_anything_runs(tmp_path, capsys) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "a?", "answers": ["x"]}) + "\n")
    work = tmp_path / "w"
    code, _, err = run_cli(capsys, "eval", "qa", str(data), "--ideal", "--work", str(work), "--fail-if-worse")
    assert code == 1 and "--fail-if-worse needs --baseline" in err
    code, _, err = run_cli(capsys, "eval", "qa", str(data), "--work", str(work), "--baseline", str(tmp_path / "nope"))
    assert code == 1 and "baseline" in err and "not found" in err
    assert not work.exists()


@pytest.mark.integration
def test_show_errors_prints_the_answers_that_are_not_correct(tmp_path, capsys) -> None:
    good = tmp_path / "good"
    argv = _ideal_run(tmp_path, capsys, good)
    code, out, _ = run_cli(capsys, *argv, "--out", str(good), "--show-errors", "5")
    assert code == 0 and "every answer is correct" in out
    _spoil(good, keep=2)
    code, out, _ = run_cli(capsys, *argv, "--out", str(good), "--show-errors", "1")
    assert code == 0
    shown = out.split("Answers that are not correct (first 1, wrong first):")[1]
    assert shown.count("WRONG  qa") == 1 and "answer: Atlantis" in shown and "gold:" in shown


@pytest.mark.integration  # the CLI in a process
def test_an_evaluation_as_one_reader_searches_only_what_it_may_read(tmp_path, capsys) -> None:
    doc = tmp_path / "lyon.txt"
    doc.write_text("Lyon is a city in France.")
    kb = tmp_path / "kb"
    code, _, _ = run_cli(capsys, "ingest", "--kb", str(kb), "--readers", "group:finance", str(doc))
    assert code == 0
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "Where is Lyon?", "answers": ["France"]}) + "\n")
    outcomes = {}
    for reader in ("carol:finance", "bob", None):
        out = tmp_path / f"out-{reader}"
        argv = ["eval", "qa", str(data), "--kb", str(kb), "--ideal", "--work", str(tmp_path / "w"), "--out", str(out)]
        code, _, err = run_cli(capsys, *argv, *(["--reader", reader] if reader else []))
        assert code == 0, err
        row = json.loads((out / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
        outcomes[reader] = (row["outcome"], row["retrieved"])
    assert outcomes["carol:finance"][0] == outcomes[None][0] == "correct"
    assert outcomes["bob"] == ("abstained", [])
    work = tmp_path / "refused"
    code, _, err = run_cli(
        capsys, "eval", "qa", str(data), "--kb", str(kb), "--ideal", "--reader", "b b", "--work", str(work)
    )
    assert code == 1 and "--reader" in err and not work.exists()
    code, _, err = run_cli(capsys, "eval", "routing", "--kb", str(kb), "--reader", "b b", "--work", str(work))
    assert code == 1 and "--reader" in err and not work.exists()
