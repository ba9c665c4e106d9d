"""The command line: version, config, plugins, streaming, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonloop import __version__
from reasonloop.cli import main
from reasonloop.config import load_settings
from reasonloop.plugin_table import PLUGINS
from reasonloop.registry import Registry
from tests.cli_run import run_cli as run
from tests.environment import is_outside_setting
from tests.fresh_process import run_fresh
from tests.test_registry import make_dist, make_module

REASONLOOP = str(Path(sys.executable).with_name("reasonloop"))


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """A cwd without reasonloop.toml, no REASONLOOP_* variables, and the default registry restored."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    saved = Registry._default
    yield
    Registry.set_default(saved)


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"reasonloop {__version__}")


def test_config_show_masks_secrets(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_API_KEY", "sk-live-123")
    monkeypatch.setenv("REASONLOOP_LLM__API_KEY_ENV", "MY_API_KEY")
    (tmp_path / "reasonloop.toml").write_text(
        '[llm]\nprovider = "openai"\n[llm.extra]\napi_key = "inline-secret"\n', encoding="utf-8"
    )
    code, out, _ = run(capsys, "config", "show")
    assert code == 0
    assert "[llm]" in out
    assert 'provider = "openai"' in out
    assert 'api_key_env = "MY_API_KEY" # set' in out  # the variable's name is no secret
    assert 'api_key = "***" # masked' in out
    assert "sk-live-123" not in out
    assert "inline-secret" not in out
    saved = tmp_path / "shown.toml"
    saved.write_text(out, encoding="utf-8")  # masked, and still a file reasonloop accepts
    assert load_settings(saved).llm.extra == {"api_key": "***"}

    code, out, _ = run(capsys, "config", "show", "--json")
    data = json.loads(out)
    assert data["llm"]["api_key_env"] == "MY_API_KEY (set: ***)"
    assert data["llm"]["extra"]["api_key"] == "***"


CONFIG_WITH_EVERYTHING = """
log_level = "info"
[llm]
provider = "openai"
model = "gpt-4o-mini"
api_key_env = "UNSET_KEY_FOR_TEST"
temperature = 0.2
[llm.extra]
api_version = "2024-06-01"
extra_body = { "seed" = 7, "options" = { "num_ctx" = 4096 } }
[kb]
path = "elsewhere/kb"
[kb.options]
chunk_tokens = 150
[kb.options.retriever]
fusion = "rrf"
rrf_k = 30
[plugins.paths]
tool = ["my_tools:WeatherTool", "more_tools:ClockTool"]
[[tools.mcp_servers]]
name = "files"
command = "python"
args = ["-m", "my_mcp_server", "--root", "/data with spaces"]
allow = ["read_file"]
[tools.mcp_servers.env]
"ROOT.DIR" = "/data"
[[server.api_keys]]
sha256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
tenant = "team-a"
rate_per_minute = 120
[[server.api_keys]]
sha256 = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
tenant = "team-b"
[agents.researcher]
reasoning = "react"
tools = ["docsearch"]
instructions = "Cite every claim. Quote \\"exactly\\".\\nNew line [not markup]."
"""


def test_config_show_prints_a_file_that_loads_back_to_the_same_settings(capsys, monkeypatch, tmp_path):
    (tmp_path / "reasonloop.toml").write_text(CONFIG_WITH_EVERYTHING, encoding="utf-8")
    monkeypatch.setenv("REASONLOOP_RUNS__MAX_CONCURRENT", "3")  # the environment is part of what is shown
    monkeypatch.setenv("COLUMNS", "40")  # long lines are not wrapped
    expected = load_settings()
    assert expected.llm.temperature == 0.2 and expected.llm.max_tokens is None  # an unset value in it
    code, out, err = run(capsys, "config", "show")
    assert code == 0, err
    saved = tmp_path / "saved" / "reasonloop.toml"
    saved.parent.mkdir()
    saved.write_text(out, encoding="utf-8")
    monkeypatch.delenv("REASONLOOP_RUNS__MAX_CONCURRENT")
    assert "null" not in out
    assert load_settings(saved) == expected
    assert 'api_key_env = "UNSET_KEY_FOR_TEST" # not set' in out


def test_config_option_selects_the_file(capsys, tmp_path):
    path = tmp_path / "elsewhere.toml"
    path.write_text('[llm]\nmodel = "chosen"\n', encoding="utf-8")
    code, out, _ = run(capsys, "--config", str(path), "config", "show", "--json")
    assert code == 0
    assert json.loads(out)["llm"]["model"] == "chosen"


def test_invalid_config_is_one_line_error(capsys, tmp_path):
    (tmp_path / "reasonloop.toml").write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    code, out, err = run(capsys, "config", "show")
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "[config.invalid]" in err
    assert "llm.modle: unknown key" in err
    assert "Traceback" not in err


def test_plugins_json_lists_kind_id_description(capsys, tmp_path):
    code, out, _ = run(capsys, "plugins", "--json")
    assert code == 0
    rows = json.loads(out)
    scripted = next(r for r in rows if (r["kind"], r["id"]) == ("llm", "scripted"))
    assert scripted["description"].startswith("Replays a JSON list of replies")
    assert scripted["error"] is None
    assert {"kind", "id", "description", "source", "target", "error"} == set(scripted)


def test_plugins_reports_a_broken_dotted_plugin_and_lists_the_rest(capsys, tmp_path):
    (tmp_path / "reasonloop.toml").write_text(
        '[plugins.paths]\ntool = ["no_such_module_for_cli:Thing"]\n', encoding="utf-8"
    )
    code, out, _ = run(capsys, "plugins", "--json")
    assert code == 0
    rows = {(r["kind"], r["id"]): r for r in json.loads(out)}
    broken = rows[("tool", "no_such_module_for_cli:Thing")]
    assert broken["error"]["code"] == "plugin.load_failed"
    assert rows[("llm", "scripted")]["error"] is None


@pytest.mark.integration
def test_plugins_describes_every_plugin_without_importing_them(tmp_path):
    out, modules = run_fresh(tmp_path, "plugins", "--json")
    rows = {(r["kind"], r["id"]): r for r in json.loads(out)}
    for row in PLUGINS:
        listed = rows[(row.kind, row.id)]
        assert listed["description"].startswith(row.description), row
        assert (listed["source"], listed["error"]) == ("builtin", None)
    sdks = {"anthropic", "openai", "google.genai", "ollama", "llama_cpp", "fastapi", "uvicorn", "redis", "mcp"}
    assert sorted(sdks & modules) == []
    assert not any(m.startswith(("reasonloop.llm.", "reasonloop.reasoning.", "reasonloop.tools.")) for m in modules)


def test_plugins_check_imports_them_and_shows_the_broken_ones(capsys, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = make_module(tmp_path, "raise RuntimeError('kaboom at import')\n")
    table = make_module(tmp_path, f"TABLE = {{'{broken}:Thing': 'Does a thing'}}\n")
    make_dist(
        tmp_path,
        {"reasonloop.tool": {"thing": f"{broken}:Thing"}, "reasonloop.descriptions": {"t": f"{table}:TABLE"}},
    )
    code, out, _ = run(capsys, "plugins", "--kind", "tool", "--json")
    row = next(r for r in json.loads(out) if r["id"] == "thing")
    assert (code, row["description"], row["error"]) == (0, "Does a thing", None)
    code, out, _ = run(capsys, "plugins", "--kind", "tool", "--json", "--check")
    row = next(r for r in json.loads(out) if r["id"] == "thing")
    assert (code, row["error"]["code"]) == (0, "plugin.load_failed")
    assert "kaboom at import" in row["error"]["message"]


def test_plugins_table(capsys):
    code, out, _ = run(capsys, "plugins", "--kind", "llm")
    assert code == 0
    assert "scripted" in out
    assert "kind" in out and "description" in out


def test_llm_streams_from_scripted_replies(capsys, tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Streaming works."]), encoding="utf-8")
    code, out, err = run(capsys, "llm", "--llm", f"scripted:{replies}", "Say something")
    assert code == 0
    assert out == "Streaming works.\n"
    assert "prompt +" in err and "completion tokens (estimated)" in err


def test_unknown_provider_is_one_line_error_with_code(capsys):
    code, out, err = run(capsys, "llm", "--llm", "nosuchprovider:model", "hi")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1, err
    assert err.startswith("error [plugin.not_found] no llm plugin named 'nosuchprovider'")
    assert "scripted" in err  # the available ids are listed
    assert "Traceback" not in err


def test_debug_shows_the_exception(capsys):
    from reasonloop.errors import PluginNotFound

    with pytest.raises(PluginNotFound):
        main(["--debug", "llm", "--llm", "nosuchprovider", "hi"])


def test_usage_error_exits_non_zero(capsys):
    code, _, err = run(capsys, "llm")
    assert code == 2
    assert "Missing argument" in err


@pytest.mark.integration
def test_console_script_errors_without_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not is_outside_setting(k)}
    proc = subprocess.run(
        [REASONLOOP, "llm", "--llm", "nosuchprovider:x", "hi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "[plugin.not_found]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_local_model_hint_is_printed_verbatim(capsys, monkeypatch):
    from reasonloop.llm.scripted import ScriptedProvider

    class LocalLookalike(ScriptedProvider):
        id = "local"

    monkeypatch.setattr("reasonloop.llm.resolve.create_llm", lambda spec, settings: LocalLookalike(replies=["hi"]))
    code, out, err = run(capsys, "llm", "hello")
    assert (code, out) == (0, "hi\n")
    assert "not instruction-tuned" in err
    assert "[llm] in reasonloop.toml" in " ".join(err.split())  # not swallowed as console markup


@pytest.mark.parametrize(("configured", "expected"), [(None, "low"), ("idle", None)])
def test_serve_with_workers_gives_sqlite_writers_low_priority_unless_configured(
    capsys, monkeypatch, tmp_path, configured, expected
):
    from reasonloop.cli import serving

    started: list[dict] = []
    monkeypatch.setattr(serving, "run_server", lambda app, **options: started.append({"app": app, **options}) or True)
    config = tmp_path / "reasonloop.toml"
    config.write_text(f'[runs]\nwriter_priority = "{configured}"\n' if configured else "")
    before = dict(os.environ)
    try:
        code, _, err = run(capsys, "--config", str(config), "serve", "--workers", "2")
        assert code == 0, err
        assert started and started[0]["workers"] == 2
        assert os.environ.get("REASONLOOP_RUNS__WRITER_PRIORITY") == expected
    finally:  # what serve set for its workers must not reach later tests
        os.environ.clear()
        os.environ.update(before)


@pytest.mark.integration
def test_serve_with_its_run_store_down_says_so_in_one_line_and_binds_nothing(tmp_path):
    from tests.runs.helpers import free_port

    port = free_port()
    env = {
        **os.environ,
        "REASONLOOP_RUNS__STORE": "redis",
        "REASONLOOP_RUNS__REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
    }
    done = subprocess.run(
        [REASONLOOP, "serve", "--port", str(port)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error [run.store_unavailable] Redis at redis://127.0.0.1:")
    assert done.stdout == ""

    debug = subprocess.run(
        [REASONLOOP, "--debug", "serve", "--port", str(port)], capture_output=True, text=True, env=env, timeout=60
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr  # the details, when asked for
