"""Every command's --help, as an 80-column terminal shows it: all of its text, flags shown as flags."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import pytest
import typer

from reasonloop.cli import app, main
from reasonloop.cli.app import COMMAND_MODULES


def _all() -> list[tuple[list[str], Any]]:
    """(path, command) for the root and every sub-command, as ``main`` registers them."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(["--help"])
    found: list[tuple[list[str], Any]] = []

    def walk(path: list[str], command: Any) -> None:
        found.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk([*path, name], sub)

    walk([], typer.main.get_command(app))
    return found


COMMANDS = _all()


def render_help(capsys, monkeypatch, path: list[str]) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    try:
        main([*path, "--help"])
    except SystemExit as exc:
        assert not exc.code
    return capsys.readouterr().out


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS])
def test_help_shows_every_text_whole_at_80_columns(capsys, monkeypatch, path, command):
    shown = render_help(capsys, monkeypatch, path)
    assert max(len(line) for line in shown.splitlines()) <= 80
    for param in command.params:
        help_text = getattr(param, "help", None)
        if help_text:  # brackets and all: nothing is taken for markup
            assert flat(help_text) in flat(shown), (param.name, shown)
    if command.help:
        assert flat(command.help.split("\n\n")[0]) in flat(shown)
    for name, sub in getattr(command, "commands", {}).items():  # each sub-command's summary, not cut short
        line = re.search(rf"^  {re.escape(name)}\s+(.+)$", shown, re.MULTILINE)
        assert line and not line.group(1).endswith("..."), shown
        assert flat(sub.help or "").startswith(line.group(1)), shown


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS])
def test_flags_are_shown_as_flags(capsys, monkeypatch, path, command):
    shown = render_help(capsys, monkeypatch, path)
    assert "<bool>" not in shown
    for param in command.params:
        if param.param_type_name == "option" and getattr(param, "is_flag", False) and not param.hidden:
            line = next(line for line in shown.splitlines() if param.opts[-1] in line)
            assert re.search(rf"{re.escape(param.opts[-1])}\s{{2,}}\S", line), line  # the help follows the flag


def test_the_bracketed_texts_users_reported_are_whole(capsys, monkeypatch):
    shown = flat(render_help(capsys, monkeypatch, ["ask"]))
    assert "(default: [kb] path, i.e. ./.reasonloop)." in shown
    assert "Run the agent declared as [agents.NAME] in the config." in shown
    shown = flat(render_help(capsys, monkeypatch, []))
    assert "--debug Show tracebacks and debug logs." in shown


ONE_THEN_HELP = """
import contextlib, io, json, sys
import typer
from reasonloop.cli import main
from reasonloop.cli.app import COMMAND_MODULES, app
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["search", "--help"])  # imports kb_cmd alone first
with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.suppress(SystemExit):
    main(["--help"])
print(json.dumps(shown.getvalue()))
"""


@pytest.mark.integration
def test_help_lists_the_commands_in_one_order_whichever_ran_first(capsys, monkeypatch):
    import json
    import subprocess
    import sys

    monkeypatch.setenv("COLUMNS", "80")
    after_search = json.loads(
        subprocess.run([sys.executable, "-c", ONE_THEN_HELP], capture_output=True, text=True, check=True).stdout
    )
    listed = re.findall(r"^  (\w+)\s", after_search.split("Commands:")[1], re.MULTILINE)
    assert listed == list(COMMAND_MODULES)
    same_process = render_help(capsys, monkeypatch, [])
    assert after_search.split("\n", 1)[1] == same_process.split("\n", 1)[1]  # past the program name


@pytest.mark.integration
def test_every_command_is_in_the_table_of_command_modules():
    """Each module registers exactly the commands the table gives it (built here in a new process)."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, importlib, typer\n"
        "from reasonloop.cli.app import COMMAND_MODULES, app\n"
        "seen, out = set(), {}\n"
        "for module in dict.fromkeys(COMMAND_MODULES.values()):\n"
        "    importlib.import_module('reasonloop.cli.' + module)\n"
        "    names = set(typer.main.get_command(app).commands)\n"
        "    out[module] = sorted(names - seen)\n"
        "    seen |= names\n"
        "print(json.dumps(out))\n"
    )
    registered = json.loads(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    expected: dict[str, list[str]] = {}
    for name, module in COMMAND_MODULES.items():
        expected.setdefault(module, []).append(name)
    assert registered == {m: sorted(n) for m, n in expected.items()}
