"""The quick start holds together: what scripts/demo.sh ingests is what the README's next commands see."""

from __future__ import annotations

import base64
import json
import os
import shlex
from pathlib import Path

import pytest

from reasonloop.registry import Registry
from tests.cli_run import run_cli as cli
from tests.environment import is_outside_setting

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "scripts" / "demo.sh"
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


def demo_commands() -> dict[str, list[str]]:
    """The reasonloop commands demo.sh runs, by sub-command, as argument lists."""
    commands: dict[str, list[str]] = {}
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        if '"$VENV/bin/reasonloop"' not in line or line.lstrip().startswith("#"):
            continue
        words = shlex.split(line.replace('"$@"', "").replace('"$question"', "'What is ReWOO?'"))
        args = words[words.index("$VENV/bin/reasonloop") + 1 :]
        commands[args[0]] = args
    return commands


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A working directory like the repository's: a docs/ folder, no reasonloop.toml."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rewoo.md").write_text(
        "# ReWOO\n\nReWOO plans every tool call first, runs them, then writes the answer.", encoding="utf-8"
    )
    (docs / "grounding.md").write_text("# Grounding\n\nAnswers cite the chunks they were built from.", encoding="utf-8")
    (docs / "images").mkdir()  # like the repository's docs/: screenshots, which only OCR could read
    (docs / "images" / "webui.png").write_bytes(base64.b64decode(PNG_1X1))
    saved = Registry._default
    yield tmp_path
    Registry.set_default(saved)


def test_the_demo_ingests_into_the_knowledge_base_the_next_commands_use(project, capsys):
    commands = demo_commands()
    assert set(commands) == {"ingest", "ask"}
    code, _, err = cli(capsys, *commands["ingest"])
    assert code == 0, err

    code, out, _ = cli(capsys, "kb", "stats", "--json")
    assert json.loads(out)["documents"] == 2
    code, out, _ = cli(capsys, "search", "plans every tool call", "--json", "--top-k", "1")
    assert json.loads(out)[0]["source"].endswith("rewoo.md")

    # The demo's question, answered from what it ingested (a scripted model in place of the local one).
    replies = project / "replies.json"
    replies.write_text(json.dumps(["ReWOO plans first [1]."]), encoding="utf-8")
    code, out, err = cli(capsys, *commands["ask"], "--llm", f"scripted:{replies}", "--events")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert "is empty" not in err
    answer = next(e for e in events if e["type"] == "answer")
    assert any(c["source"].endswith("rewoo.md") for c in answer["citations"])
