"""``reasonloop ask --approve``: tool calls asked on the terminal, or answered for scripts."""

from __future__ import annotations

import io
import json

import pytest

from tests.cli_run import run_cli as run
from tests.test_ask_cmd import REPLIES, isolated, script  # noqa: F401  (the fixture, used by every test)

ASK = ["ask", "What colour is the sky?", "-r", "react", "--tools", "lookup"]


@pytest.fixture(autouse=True)
def asks_for_lookup(isolated, tmp_path):  # noqa: F811
    with (tmp_path / "reasonloop.toml").open("a", encoding="utf-8") as f:
        f.write('[approvals]\ntools = { lookup = "always" }\n')


def events_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_approve_all_confirms_every_call(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "all")
    assert code == 0
    lines = out.splitlines()
    assert "⏸ lookup waits for approval" in lines and "← value of sky" in lines
    assert lines.index("⏸ lookup waits for approval") < lines.index("▶ confirm : --approve all")


def test_approve_never_rejects_every_call_and_the_model_reads_why(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "never", "--events")
    assert code == 0
    events = events_of(out)
    [decided] = [e for e in events if e["type"] == "approval_decided"]
    assert decided["decision"] == "reject" and decided["by"] == {"via": "cli"}
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["error"]["code"] == "tool.rejected" and "rejected by --approve never" in result["output"]


def test_without_a_terminal_a_call_is_rejected_saying_nobody_could_answer(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES))
    assert code == 0
    assert "← ToolRejected: the call was rejected by its approver: nobody could approve it" in out


def test_a_call_is_asked_on_the_terminal_and_a_bad_modification_asked_again(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('x\nm\n{"key": 5}\nm\nnot json\nm\n{"key": "sea"}\n'))
    code, out, err = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "ask")
    assert code == 0
    assert 'approve? lookup {"key": "sky"} ([approvals] tools ask for lookup)' in out
    assert "answer c, m or r" in err
    said = " ".join(err.split())  # as the console wrapped it
    assert "key: 5 is not of type 'string'" in said and "not a JSON object" in said
    assert "← value of sea" in out and "▶ modify" in out


def test_a_rejection_on_the_terminal_carries_its_reason(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("r\nnot the sky\n"))
    code, out, _ = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "ask", "--events")
    assert code == 0
    [result] = [e for e in events_of(out) if e["type"] == "tool_result"]
    assert "rejected by its approver: not the sky" in result["output"]


def test_the_standard_input_ending_rejects_the_call(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, out, _ = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "ask")
    assert code == 0 and "the standard input ended while a tool call waited for approval" in out


def test_an_unknown_approve_mode_is_refused(capsys, tmp_path) -> None:
    code, _, err = run(capsys, *ASK, "--llm", script(tmp_path, REPLIES), "--approve", "sometimes")
    assert code == 2 and "--approve" in err
