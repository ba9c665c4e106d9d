"""Settings: ``reasonloop.toml`` overridden by ``REASONLOOP_*`` environment variables.

Precedence, highest first: values passed in code, environment (``REASONLOOP_LLM__MODEL``,
nested keys joined by ``__``), the TOML file (``--config PATH`` or ``./reasonloop.toml``),
defaults. Secrets never live in the file: a setting ending in ``_env`` names the
environment variable that holds the secret (``api_key_env = "OPENAI_API_KEY"``), and
:func:`secret` reads it. Unknown keys and wrong types are :class:`~reasonloop.errors.ConfigError`
(``config.invalid``) naming the key.

This package holds the whole :class:`Settings`, how they are loaded and how secrets are read and
masked, beside the two small ``[plugins]`` and ``[telemetry]`` sections; each larger section is a
module of its own in this package (``llm``, ``kb``, ``tools``, ``runs``, ``server``, ``agents``),
and every name is re-exported here.
"""

from __future__ import annotations

import contextvars
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reasonloop.config.agents import AgentSettings
from reasonloop.config.kb import KBSettings, ParseLimits
from reasonloop.config.llm import LLMSettings
from reasonloop.config.runs import RunsSettings
from reasonloop.config.server import APIKeySettings, ServerSettings
from reasonloop.config.tools import (
    ApprovalPolicy,
    ApprovalSettings,
    FeedbackSettings,
    HTTPToolSettings,
    MCPServerSettings,
    MCPSettings,
    Section,
    ToolsSettings,
    WebSearchSettings,
    WikipediaSettings,
)
from reasonloop.errors import ConfigError

__all__ = [
    "APIKeySettings",
    "AgentSettings",
    "ApprovalPolicy",
    "ApprovalSettings",
    "FeedbackSettings",
    "HTTPToolSettings",
    "KBSettings",
    "LLMSettings",
    "MCPServerSettings",
    "MCPSettings",
    "ParseLimits",
    "PluginSettings",
    "RunsSettings",
    "ServerSettings",
    "Settings",
    "TelemetrySettings",
    "ToolsSettings",
    "WebSearchSettings",
    "WikipediaSettings",
    "load_settings",
    "masked_dump",
    "secret",
]

DEFAULT_CONFIG_FILE = "reasonloop.toml"
_toml_path: contextvars.ContextVar[Path | None] = contextvars.ContextVar("reasonloop_toml", default=None)


_Section = Section


class PluginSettings(_Section):
    """Third-party plugins loaded by dotted path, beside the ``reasonloop.<kind>`` entry points."""

    paths: dict[str, list[str]] = Field(default_factory=dict)
    """Kind -> list of ``package.module:Attribute`` paths, e.g. ``{"tool": ["mytools:Weather"]}``."""


class TelemetrySettings(_Section):
    """OpenTelemetry traces and GenAI metrics (needs the ``telemetry`` extra). Off by default; what
    is left empty here comes from the standard ``OTEL_*`` environment variables."""

    enabled: bool = False
    """Trace every run (``OTEL_TRACES_EXPORTER=otlp`` turns it on too; ``OTEL_SDK_DISABLED=true`` off)."""
    endpoint: str = ""
    """Collector base URL (``http://127.0.0.1:4318`` for OTLP/HTTP, ``http://127.0.0.1:4317`` for gRPC);
    empty: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or the SDK's default."""
    protocol: Literal["", "http/protobuf", "grpc"] = ""
    """Empty: ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf``."""
    service_name: str = ""
    """Empty: ``OTEL_SERVICE_NAME``, else ``reasonloop``."""
    capture_content: bool = False
    """Record prompts, completions, tool arguments and results on the spans (they can hold private data)."""
    metrics: bool = True
    """Export ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` over OTLP too."""
    export_timeout_s: float = Field(default=5.0, gt=0)
    """How long one export may take before it counts as failed (in the exporter's thread, never a run's)."""


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
    tools: ToolsSettings = Field(default_factory=ToolsSettings)
    runs: RunsSettings = Field(default_factory=RunsSettings)
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    agents: dict[str, AgentSettings] = Field(default_factory=dict)
    """Declared agents by name (``[agents.NAME]`` tables)."""
    agents_file: str = ""
    """A TOML file of more ``[agents.NAME]`` tables (relative paths start at the working directory)."""
    agent_max_depth: int = Field(default=3, ge=1)
    """How deep agents may nest when they call each other as tools (the top-level run is depth 0)."""

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
