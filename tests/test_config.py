"""Settings: file < environment < code, secrets only from the environment, clear errors."""

from __future__ import annotations

import json
import os

import pytest

from reasonloop.config import Settings, load_settings, masked_dump, secret
from reasonloop.errors import ConfigError
from tests.environment import is_outside_setting


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No REASONLOOP_* variables from the outside, and a cwd without reasonloop.toml."""
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file_or_env():
    settings = load_settings()
    assert settings == Settings()
    assert settings.llm.provider == "auto"
    assert settings.llm.max_retries == 3


def test_cwd_file_is_read(tmp_path):
    write(tmp_path / "reasonloop.toml", '[llm]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n')
    settings = load_settings()
    assert (settings.llm.provider, settings.llm.model) == ("openai", "gpt-4o-mini")


def test_env_overrides_file_key_by_key(tmp_path, monkeypatch):
    write(tmp_path / "reasonloop.toml", '[llm]\nprovider = "openai"\nmodel = "from-file"\nfirst_token_timeout_s = 5\n')
    monkeypatch.setenv("REASONLOOP_LLM__MODEL", "from-env")
    monkeypatch.setenv("REASONLOOP_KB__PATH", "/data/kb")
    settings = load_settings()
    assert settings.llm.model == "from-env"
    assert settings.llm.provider == "openai"  # untouched file keys survive the nested override
    assert settings.llm.first_token_timeout_s == 5
    assert settings.kb.path == "/data/kb"


def test_code_overrides_env(monkeypatch):
    monkeypatch.setenv("REASONLOOP_LOG_LEVEL", "error")
    assert load_settings().log_level == "error"
    assert load_settings(log_level="debug").log_level == "debug"


def test_explicit_path_wins_over_cwd_file(tmp_path):
    write(tmp_path / "reasonloop.toml", '[llm]\nmodel = "cwd"\n')
    other = write(tmp_path / "other.toml", '[llm]\nmodel = "explicit"\n')
    assert load_settings(other).llm.model == "explicit"


def test_missing_explicit_path_is_config_error(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path / "nope.toml")
    assert info.value.code == "config.invalid"
    assert "nope.toml" in info.value.message


def test_unknown_key_names_the_key(tmp_path):
    write(tmp_path / "reasonloop.toml", '[llm]\nmodle = "typo"\n')
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert info.value.code == "config.invalid"
    assert "llm.modle" in info.value.message
    assert "unknown key" in info.value.message
    assert info.value.details["keys"] == ["llm.modle"]


def test_unknown_section_names_the_key(tmp_path):
    write(tmp_path / "reasonloop.toml", "[lmm]\nmodel = 1\n")
    with pytest.raises(ConfigError, match="lmm"):
        load_settings()


def test_wrong_type_names_key_and_value(tmp_path):
    write(tmp_path / "reasonloop.toml", '[llm]\nidle_timeout_s = "soon"\n')
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "llm.idle_timeout_s" in info.value.message
    assert "'soon'" in info.value.message


def test_wrong_type_from_env_names_key(monkeypatch):
    monkeypatch.setenv("REASONLOOP_LLM__MAX_RETRIES", "many")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "llm.max_retries" in info.value.message
    assert "environment" in info.value.message


def test_out_of_range_value_is_rejected(tmp_path):
    write(tmp_path / "reasonloop.toml", "[llm]\nfirst_token_timeout_s = 0\n")
    with pytest.raises(ConfigError, match=r"llm\.first_token_timeout_s"):
        load_settings()


def test_unparsable_toml_is_config_error(tmp_path):
    path = write(tmp_path / "broken.toml", "[llm\nmodel = \n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.code == "config.invalid"
    assert "not valid TOML" in info.value.message
    assert "broken.toml" in info.value.message


def test_secret_reads_named_variable(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-123")
    monkeypatch.setenv("EMPTY_KEY", "")
    assert secret("MY_KEY") == "sk-123"
    assert secret("EMPTY_KEY") is None
    assert secret("UNSET_KEY_FOR_TEST") is None
    assert secret("") is None


def test_masked_dump_hides_secrets(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-very-secret")
    settings = load_settings(
        llm={"api_key_env": "MY_KEY", "extra": {"api_key": "inline-secret", "auth_token": "tok", "api_version": "v1"}},
        kb={"options": {"qdrant": {"password": "hunter2", "url": "http://q"}}},
    )
    data = masked_dump(settings)
    dumped = json.dumps(data)
    for leaked in ("sk-very-secret", "inline-secret", "hunter2", '"tok"'):
        assert leaked not in dumped
    assert data["llm"]["api_key_env"] == "MY_KEY (set: ***)"
    assert data["llm"]["extra"] == {"api_key": "***", "auth_token": "***", "api_version": "v1"}
    assert data["kb"]["options"]["qdrant"] == {"password": "***", "url": "http://q"}


def test_masked_dump_says_when_secret_variable_is_unset():
    data = masked_dump(load_settings(llm={"api_key_env": "UNSET_KEY_FOR_TEST"}))
    assert data["llm"]["api_key_env"] == "UNSET_KEY_FOR_TEST (not set)"


def test_unknown_nested_key_from_env_names_the_key(monkeypatch):
    monkeypatch.setenv("REASONLOOP_LLM__MODLE", "typo")
    with pytest.raises(ConfigError, match=r"llm\.modle: unknown key"):
        load_settings()


def test_the_replaced_whole_response_timeout_names_its_successors(tmp_path):
    write(tmp_path / "reasonloop.toml", "[llm]\ntimeout_s = 120\n")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "first_token_timeout_s" in info.value.message and "idle_timeout_s" in info.value.message
