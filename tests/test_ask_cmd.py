"""``reasonloop ask`` / ``chat``: live trace, --json, --events, --set, errors, Ctrl-C, history."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from reasonloop.agents import Agent
from reasonloop.cli.ask_cmd import QUOTE_CHARS, TraceRenderer, consume, parse_sets, trim_quote
from reasonloop.errors import ConfigError
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from tests.cli_run import run_cli as run
from tests.environment import is_outside_setting

REPLIES = [
    'Thought: I should look this up.\nAction: lookup\nAction Input: {"key": "sky"}',
    "Thought: I know.\nFinal Answer: The sky is blue.",
]

PLUGIN = textwrap.dedent('''
    import asyncio
    import signal

    from reasonloop.events import Citation
    from reasonloop.reasoning.base import Reasoning
    from reasonloop.registry import PluginInfo
    from reasonloop.tools.base import tool


    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"


    @tool
    async def interrupt(key: str) -> str:
        """Presses Ctrl-C, then waits forever."""
        signal.raise_signal(signal.SIGINT)
        await asyncio.sleep(3600)
        return "never"


    class Cite(Reasoning):
        """Answers citing a sentence of a PDF page and a long passage of a text file."""

        info = PluginInfo(id="cite", name="Cite", description="Answers with two citations")

        async def stream(self, question):
            long = " ".join(f"Storm{i} closed the harbour." for i in range(40))
            yield self.answer(
                "The keeper logs ships [1] and storms [2].",
                [
                    Citation(marker=1, source="docs/harbour.pdf", page=3, quote="The keeper logs\\n every ship.",
                             start=120, end=146, chunk_start=80, chunk_end=300),
                    Citation(marker=2, source="notes/storms.md", quote=long),
                ],
            )
''')


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A cwd with a plugin module for tools, no REASONLOOP_* variables, the registry restored."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cli_test_tools.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "reasonloop.toml").write_text(
        '[plugins.paths]\ntool = ["cli_test_tools:lookup", "cli_test_tools:interrupt"]\n'
        'reasoning = ["cli_test_tools:Cite"]\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Ctrl-C must raise KeyboardInterrupt as in a fresh CLI process, whatever handler an earlier
    # test in this process (an in-process server, say) left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    saved = Registry._default
    yield
    Registry.set_default(saved)
    signal.signal(signal.SIGINT, previous)
    sys.modules.pop("cli_test_tools", None)


def script(tmp_path: Path, replies: list) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def test_ask_streams_the_trace(capsys, tmp_path) -> None:
    code, out, _ = run(
        capsys, "ask", "What colour is the sky?", "-r", "react", "--llm", script(tmp_path, REPLIES), "--tools", "lookup"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "reasoning: react"
    assert "Thought: I should look this up." in lines
    assert '→ lookup {"key": "sky"}' in lines and "← value of sky" in lines
    assert lines.index("Thought: I know.") < lines.index("Answer: The sky is blue.")
    assert "2 LLM calls" in lines[-1] and "1 tool calls" in lines[-1] and "final" in lines[-1]


def test_ask_shows_a_plan_from_its_event_once(capsys, tmp_path) -> None:
    replies = ["Plan: look both up\n#E1 = lookup[sky]\n#E2 = lookup[#E1 and sea]", "Both are blue."]
    code, out, _ = run(capsys, "ask", "q", "-r", "rewoo", "--llm", script(tmp_path, replies), "--tools", "lookup")
    assert code == 0
    lines = out.splitlines()
    plan = lines.index("Plan:")
    assert lines[plan + 1 : plan + 3] == ["  #E1 lookup: sky", "  #E2 lookup: #E1 and sea (after #E1)"]
    assert not any("#E1 = lookup[sky]" in line for line in lines)  # the plan's text is not shown twice
    assert "0 searches" in lines[-1] and "2 tool calls" in lines[-1]


def test_ask_json_prints_only_the_run_result(capsys, tmp_path) -> None:
    code, out, _ = run(
        capsys,
        "ask",
        "q",
        "-r",
        "react",
        "--llm",
        script(tmp_path, REPLIES),
        "--tools",
        "lookup",
        "--json",
        "--set",
        "max_rounds=1",
    )
    data = json.loads(out)
    assert code == 0 and data["stop_reason"] == "max_rounds"
    assert data["steps"][0]["action"] == "lookup" and data["meta"]["reasoning"] == "react"


def test_ask_events_prints_json_lines(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, "ask", "q", "-r", "toolcall", "--llm", script(tmp_path, ["Plain answer."]), "--events")
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and events[0]["type"] == "run_started" and events[-1]["type"] == "answer"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["reasoning"] == "toolcall"


def test_tools_given_to_a_strategy_that_calls_none_are_pointed_out(capsys, tmp_path) -> None:
    code, out, err = run(capsys, "ask", "hello", "--llm", script(tmp_path, ["Hello!"]), "--tools", "lookup")
    assert code == 0 and "Answer: Hello!" in out
    assert "note: qa calls no tools, so --tools is not used" in " ".join(err.split())
    code, _, err = run(capsys, "ask", "q", "-r", "react", "--llm", script(tmp_path, REPLIES), "--tools", "lookup")
    assert code == 0 and "calls no tools" not in err


def test_ask_errors_are_one_line_with_a_code(capsys, tmp_path) -> None:
    code, _, err = run(capsys, "ask", "q", "--llm", script(tmp_path, REPLIES), "--tools", "nosuch")
    assert code == 1 and "plugin.not_found" in err
    code, _, err = run(capsys, "ask", "q", "--llm", script(tmp_path, REPLIES), "--kb", str(tmp_path / "none"))
    assert code == 1 and "config.invalid" in err and "no knowledge base" in err
    code, _, err = run(capsys, "ask", "q", "--llm", script(tmp_path, REPLIES), "--set", "bogus=1")
    assert code == 1 and "bogus" in err
    code, _, err = run(capsys, "ask", "q", "-r", "react", "--llm", script(tmp_path, []))
    assert code == 1 and "llm.script_exhausted" in err


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_an_empty_question_is_refused_before_anything_runs(capsys, tmp_path, blank) -> None:
    code, out, err = run(capsys, "ask", blank, "--llm", script(tmp_path, ["never sent"]))
    assert code == 2 and out == ""  # no run started: not even its "reasoning:" line
    assert "Invalid value for QUESTION: the question is empty" in err


def test_empty_kb_degrades_to_no_retrievers(capsys, tmp_path) -> None:
    (tmp_path / "kb").mkdir()
    code, out, err = run(capsys, "ask", "hi", "-r", "qa", "--kb", "kb", "--llm", script(tmp_path, ["Hello!"]))
    assert code == 0 and "is empty" in err and "Answer: Hello!" in out


def test_ctrl_c_stops_the_run_and_exits_130(capsys, tmp_path) -> None:
    replies = [{"text": "Partial thoughts", "tool_calls": [{"name": "interrupt", "arguments": {"key": "k"}}]}]
    code, out, err = run(
        capsys, "ask", "q", "-r", "toolcall", "--llm", script(tmp_path, replies), "--tools", "interrupt"
    )
    assert code == 130 and "stopped" in err
    assert "Answer: Partial thoughts" in out  # shown live; it was reasoning, so no partial answer is claimed
    assert "Partial answer" not in out


async def test_consume_prints_the_partial_answer_when_cancelled(capsys) -> None:
    llm = ScriptedProvider(replies=["Final Answer: " + "word " * 200], chunk_size=5, delay_s=0.005)
    renderer = TraceRenderer()
    task = asyncio.create_task(consume(Agent("react", llm=llm), "q", [], renderer))
    while not renderer.streamed:  # noqa: ASYNC110 - the renderer is plain data, polled on purpose
        await asyncio.sleep(0.005)
    task.cancel()
    partial, stopped = await task
    assert stopped and partial and ("word " * 200).startswith(partial) and len(partial) < 1000
    assert "Partial answer: " + partial.strip() in capsys.readouterr().out
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_chat_keeps_the_conversation(monkeypatch, capsys) -> None:
    llm = ScriptedProvider(replies=["Final Answer: Paris.", "Final Answer: About two million."])
    monkeypatch.setattr("reasonloop.llm.resolve.create_llm", lambda *a, **k: llm)
    inputs = iter(["What is the capital of France?", "", "/reset", "How many live there?", "/exit"])
    monkeypatch.setattr("reasonloop.cli.ask_cmd.console.input", lambda prompt="": next(inputs))
    code, out, _ = run(capsys, "chat", "-r", "react")
    assert code == 0 and "Answer: Paris." in out and "a new conversation starts" in out
    assert [m.role for m in llm.prompts[1]] == ["system", "user"]  # /reset forgot the first turn
    llm2 = ScriptedProvider(replies=["Final Answer: Paris.", "Final Answer: About two million."])
    monkeypatch.setattr("reasonloop.llm.resolve.create_llm", lambda *a, **k: llm2)
    inputs = iter(["What is the capital of France?", "How many live there?"])

    def ask_or_eof(prompt: str = "") -> str:
        try:
            return next(inputs)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("reasonloop.cli.ask_cmd.console.input", ask_or_eof)
    code, out, _ = run(capsys, "chat", "-r", "react")
    assert code == 0
    assert [m.content for m in llm2.prompts[1][1:]] == [
        "What is the capital of France?",
        "Paris.",
        "Question: How many live there?",
    ]


def test_ask_prints_each_citations_quote_under_its_source_and_page(capsys, tmp_path) -> None:
    code, out, _ = run(capsys, "ask", "q", "-r", "cite", "--llm", script(tmp_path, []))
    assert code == 0
    lines = out.splitlines()
    first = lines.index("  [1] docs/harbour.pdf, p. 3")
    assert lines[first + 1] == "      “The keeper logs every ship.”"  # the sentence, on one line
    second = lines.index("  [2] notes/storms.md")
    shown = " ".join(line.strip() for line in lines[second + 1 : -1])  # wrapped to the terminal's width
    assert shown.startswith("“Storm0 closed the harbour. Storm1") and shown.endswith(" the…”")  # cut at a word
    assert all(line.startswith("      ") for line in lines[second + 1 : -1])  # every wrapped line indented
    assert len(shown) <= QUOTE_CHARS + 2


def test_a_quote_is_trimmed_at_a_word_on_one_line() -> None:
    assert trim_quote("  The keeper\n logs   ships. ") == "The keeper logs ships."
    long = "word " * 100
    assert trim_quote(long, 40) == "word word word word word word word word…"
    assert trim_quote("灯塔看守人记录每一艘船" * 10, 12) == "灯塔看守人记录每一艘船…"  # no spaces: cut at the limit
    assert trim_quote("A, b, c, d, e, f, g, h, i, j, k, l", 20) == "A, b, c, d, e, f, g…"
    assert trim_quote("The harbour office keeps them", 24) == "The harbour office…"


def test_chat_lines_starting_with_a_slash_are_commands_not_questions(monkeypatch, capsys) -> None:
    llm = ScriptedProvider(replies=["Final Answer: Paris.", "Final Answer: About two million."])
    monkeypatch.setattr("reasonloop.llm.resolve.create_llm", lambda *a, **k: llm)
    lines = ["/help", "What is the capital of France?", "/nope at all", "/RESET", "How many live there?", "/quit", "no"]
    inputs = iter(lines)
    monkeypatch.setattr("reasonloop.cli.ask_cmd.console.input", lambda prompt="": next(inputs))
    code, out, _ = run(capsys, "chat", "-r", "react")
    assert code == 0 and "/help for commands, /quit to leave" in out
    assert "/help  list these commands" in out and "/quit, /exit  leave (so does Ctrl-D)" in out
    assert "unknown command /nope; the commands are:" in out
    assert out.count("/reset  start a new conversation: the history is cleared") == 2  # after /help and /nope
    assert "a new conversation starts: the history is cleared" in out
    assert len(llm.prompts) == 2  # only the two questions reached the model; the line after /quit was not read
    assert not any("/" in m.content for prompt in llm.prompts for m in prompt if m.role == "user")
    assert [m.role for m in llm.prompts[1]] == ["system", "user"]  # /RESET cleared the history
    assert next(inputs) == "no"


def test_parse_sets() -> None:
    assert parse_sets(["max_rounds=3", "replan=false", "name=some text", 'x={"a": 1}']) == {
        "max_rounds": 3,
        "replan": False,
        "name": "some text",
        "x": {"a": 1},
    }
    with pytest.raises(ConfigError):
        parse_sets(["novalue"])


def test_text_streamed_before_tool_calls_is_not_taken_for_the_answer(capsys, tmp_path) -> None:
    replies = [{"text": "Let me check.", "tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}, "It is k."]
    code, out, _ = run(capsys, "ask", "q", "-r", "toolcall", "--llm", script(tmp_path, replies), "--tools", "lookup")
    lines = out.splitlines()
    assert code == 0 and "Answer: Let me check." in lines and "Answer: It is k." in lines
    assert lines.index("Answer: Let me check.") < lines.index('→ lookup {"key": "k"}') < lines.index("Answer: It is k.")


def test_a_failed_run_still_shows_what_it_consumed(capsys, tmp_path) -> None:
    # The first reply calls a tool; the script then runs out: the run fails after one real call.
    code, out, err = run(capsys, "ask", "q", "-r", "react", "--llm", script(tmp_path, REPLIES[:1]), "--tools", "lookup")
    assert code == 1 and "llm.script_exhausted" in err
    usage = out.splitlines()[-1]
    assert "2 LLM calls" in usage and "1 tool calls" in usage and "error" in usage


def test_ask_takes_a_mode_and_shows_the_route(capsys, tmp_path) -> None:
    route = json.dumps({"route": "none", "reason": "a greeting"})
    code, out, _ = run(capsys, "ask", "Hello there!", "--mode", "auto", "--llm", script(tmp_path, [route, "Hi!"]))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "reasoning: auto"
    assert "Route: none → answer without searching by the model: a greeting" in lines
    assert "Answer: Hi!" in lines
    code, out, _ = run(capsys, "ask", "Hello!", "-m", "fast", "--llm", script(tmp_path, ["Hello!"]))
    assert code == 0 and out.splitlines()[0] == "reasoning: qa"


def test_a_budget_bounds_the_auto_route(capsys, tmp_path) -> None:
    replies = [json.dumps({"route": "research", "reason": "a report"}), "Short answer."]
    argv = ["ask", "Write a report on the sky.", "--mode", "auto", "--budget-tokens", "2000"]
    code, out, _ = run(capsys, *argv, "--llm", script(tmp_path, replies), "--events")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    (route,) = [e for e in events if e["type"] == "route"]
    assert (route["route"], route["wanted"]) == ("single", "research")


def test_bad_modes_are_one_line_with_a_code(capsys, tmp_path) -> None:
    code, _, err = run(capsys, "ask", "q", "--mode", "quick", "--llm", script(tmp_path, ["never sent"]))
    assert code == 1 and "[mode.invalid] unknown mode 'quick': the modes are fast, balanced, deep" in err
    code, _, err = run(capsys, "ask", "q", "--mode", "fast", "-r", "qa", "--llm", script(tmp_path, ["x"]))
    assert code == 1 and "give a strategy or a mode, not both" in err
    code, _, err = run(capsys, "ask", "q", "--mode", "research", "--llm", script(tmp_path, ["x"]))
    assert code == 1 and "strategy research is not available" in err
    code, _, err = run(capsys, "ask", "q", "--budget-tokens", "0", "--llm", script(tmp_path, ["x"]))
    assert code == 2 and "--budget-tokens" in err
    code, _, err = run(capsys, "ask", "q", "--agent", "anyone", "--mode", "fast")
    assert code == 1 and "--agent answers with its own strategy: leave out --mode" in err


def test_chat_takes_a_mode(monkeypatch, capsys) -> None:
    llm = ScriptedProvider(replies=["Final Answer: Paris."])
    monkeypatch.setattr("reasonloop.llm.resolve.create_llm", lambda *a, **k: llm)
    inputs = iter(["What is the capital of France?", "/exit"])
    monkeypatch.setattr("reasonloop.cli.ask_cmd.console.input", lambda prompt="": next(inputs))
    code, out, _ = run(capsys, "chat", "--mode", "deep")
    assert code == 0 and "mode deep (react)" in out and "Answer: Paris." in out
