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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reasonloop.config_tools import (
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


_Port = Annotated[int, Field(ge=1, le=65535)]


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
    first_token_timeout_s: float | None = Field(default=None, gt=0)
    """How long the model may stay silent before its first token (connecting and reading the
    prompt included); unset means the provider's default (120 s for APIs, 600 s for the
    embedded model on a CPU)."""
    idle_timeout_s: float | None = Field(default=None, gt=0)
    """How long the model may stay silent between two tokens once it streams; unset means the
    provider's default (60 s; 120 s for the embedded model). A response that keeps streaming is
    never cut by these: a run's own ``timeout_s`` budget bounds its wall time."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    """Retries on 429 / 5xx / connection errors, with exponential backoff honouring Retry-After."""
    temperature: float | None = None
    max_tokens: int | None = None
    ollama_url: str = "http://127.0.0.1:11434"
    """The ollama provider's server when ``base_url`` is empty (``auto`` looks here too when it is on loopback)."""
    discover: bool = True
    """With ``provider = "auto"``, no model named and no API key in the environment, look for models
    served on this machine (loopback only) before falling back to the embedded one
    (``REASONLOOP_LLM__DISCOVER=false`` turns it off)."""
    discover_ollama_ports: list[_Port] = Field(default_factory=lambda: [11434])
    """Loopback ports where Ollama's API is looked for."""
    discover_openai_ports: list[_Port] = Field(default_factory=lambda: [1234, 8080, 8000])
    """Loopback ports where OpenAI-compatible servers are looked for (LM Studio, llama.cpp's server, vLLM)."""
    discover_timeout_s: float = Field(default=0.5, gt=0)
    """Longest wait for one discovery request; a port nobody listens on answers at once."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific options passed through unchanged (e.g. ``api_version`` for Azure)."""

    @model_validator(mode="before")
    @classmethod
    def _replaced_options(cls, data: Any) -> Any:
        if isinstance(data, dict) and "timeout_s" in data:
            raise ValueError(
                "timeout_s was replaced by first_token_timeout_s and idle_timeout_s "
                "(limits on the model's silence, not on the whole response)"
            )
        return data


_MB = 1024 * 1024


class ParseLimits(BaseModel):
    """``[kb.limits]``: what one file may cost while it is parsed."""

    model_config = ConfigDict(extra="forbid")

    max_member_bytes: int = Field(default=256 * _MB, gt=0)
    """Largest unpacked size of one member of an office file or e-book (a zip container)."""
    max_unpacked_bytes: int = Field(default=1024 * _MB, gt=0)
    """Largest unpacked size of all the members of one container."""
    max_ratio: float = Field(default=100.0, gt=1)
    """Largest compression ratio (unpacked / packed) of a member over 1 MB unpacked."""
    max_pixels: int = Field(default=50_000_000, gt=0)
    """Most pixels (width × height) of an image decoded or a page rendered for OCR; a larger PDF
    page is rendered at the scale that gives this many, a larger image fails."""
    memory_mb: int = Field(default=2048, ge=256)
    """Address space of a parsing worker process (``RLIMIT_AS``)."""
    cpu_s: int = Field(default=600, gt=0)
    """CPU seconds a parsing worker may spend on one file (``RLIMIT_CPU``)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Wall-clock seconds one file may take to parse; then its worker is killed."""
    workers: int = Field(default=0, ge=0)
    """Files parsed at once, each in its own worker process; 0 means the machine's cores (at most 4)."""
    files_per_worker: int = Field(default=64, ge=1)
    """Files a worker parses before a fresh one takes over (any failure retires it at once)."""


class KBSettings(_Section):
    """Where the knowledge base lives and how it is searched."""

    path: str = ".reasonloop"
    index: str = "local"
    embedder: str = "e5"
    options: dict[str, Any] = Field(default_factory=dict)
    """Options for the chosen index and embedder (chunk size, RRF k, qdrant url, ...)."""
    limits: ParseLimits = Field(default_factory=ParseLimits)
    """What one file may cost while it is parsed: unpacked sizes, pixels, memory, time (``[kb.limits]``)."""


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


class RunsSettings(_Section):
    """Where runs are recorded and how many run at once."""

    store: str = "sqlite"
    """Run store id: ``sqlite`` (one file, one machine) or ``redis`` (several server instances)."""
    sqlite_path: str = ""
    """SQLite file; empty means ``runs.sqlite`` under ``[kb] path``."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "reasonloop:"
    """Prefix of every Redis key, so several deployments can share one Redis."""
    redis_max_connections: int = Field(default=128, ge=1)
    """Connections for commands (appends, status); callers wait for a free one rather than fail.
    Blocking reads of followers on other instances use their own connections."""
    ttl_s: int = Field(default=7 * 24 * 3600, gt=0)
    """How long a finished run, its events and a conversation are kept in Redis."""
    max_concurrent: int = Field(default=16, ge=1)
    """Runs executing at once in one server process; more wait in the queue."""
    max_queued: int = Field(default=1000, ge=0)
    """Runs allowed to wait; beyond that a start is refused with ``run.queue_full``."""
    keep_finished_s: float = Field(default=30.0, ge=0)
    """How long a finished run's events stay in memory for late subscribers (then the store serves them)."""
    stop_wait_s: float = Field(default=5.0, gt=0)
    """How long a stop request waits for a run on another instance to end before answering."""
    journal: bool = True
    """Make each event durable in a local append-only journal before any reader sees it, and
    record it in the store behind, in batches (stores with a local journal directory: SQLite).
    Off: every event is committed to the store before readers see it (one more thread hand-off
    per event between the model and the client)."""
    record_interval_s: float = Field(default=0.1, ge=0, le=5)
    """With the journal, how long events gather before one store transaction records them. The
    SQLite store keeps each run's share of a transaction as one row, so a longer interval means
    fewer, larger rows; readers on other processes sharing the file see events this much later.
    A run's end does not wait for it: its own events are recorded at once, ahead of their batch."""
    resume_interrupted: bool = True
    """When a server instance dies (a crash, kill -9, a lost machine), another one takes over its
    runs in flight and goes on with them from the steps they had finished: each finished model
    and tool call is kept in the store while its run is in flight (and dropped at its end), and
    replayed, not done again (docs/server.md, "What survives a crash"). Off: such runs end
    ``interrupted`` with their partial answer, and nothing is kept for them."""
    writer_priority: Literal["idle", "low"] = "idle"
    """CPU priority of the SQLite store's writer threads (Linux). ``idle``: they run only when the
    event loop's thread does not want the core, so they never delay a socket; best when the server
    has its cores to itself. ``low`` (nice 19): they still get a small share when other busy
    processes want the same cores, so a writer holding the GIL or the database lock is not left
    waiting behind them; ``reasonloop serve --workers N`` uses it unless this is set."""


class APIKeySettings(_Section):
    """One API key, stored as its SHA-256 hex digest (``reasonloop serve`` never sees the key itself)."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tenant: str = "default"
    """Documents, conversations and runs are scoped to this tenant."""
    name: str = ""
    principal: str = ""
    """The user this key is, within its tenant: it reads the documents open to everyone and those
    whose readers name it (``alice`` or ``user:alice``) or one of its :attr:`groups`. Empty: a key
    that is no one in particular, which reads only the documents open to everyone and those of
    its groups."""
    groups: list[str] = Field(default_factory=list)
    """Groups the key's principal is in (``finance`` or ``group:finance``)."""
    reads_all: bool = False
    """Reads every document of its tenant whatever its readers (an administrator's key)."""
    rate_per_minute: float | None = Field(default=None, gt=0)
    """Requests per minute for this key; ``None`` uses ``[server] rate_per_minute``."""
    burst: int | None = Field(default=None, ge=1)


class ServerSettings(_Section):
    """The HTTP/WebSocket server."""

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    workers: int = Field(default=1, ge=1)
    api_keys: list[APIKeySettings] = Field(default_factory=list)
    """With no keys, auth is off (meant for loopback; a warning is logged otherwise)."""
    rate_per_minute: float | None = Field(default=None, gt=0)
    """Default per-key request rate; ``None`` means unlimited."""
    burst: int = Field(default=20, ge=1)
    """Requests a key may make at once before the rate applies."""
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    max_question_chars: int = Field(default=32_000, ge=1)
    """Longest question a run may be asked over HTTP, WebSocket, MCP or the OpenAI-compatible route,
    and longest search query (about 8,000 tokens); a longer one is refused with ``request.invalid``
    before any work starts (embedding megabytes for a search alone keeps a core busy for minutes)."""
    ws_max_frame_bytes: int = Field(default=64 * 1024, ge=64)
    """Largest WebSocket frame accepted from a client; larger ones are refused."""
    ws_ping_interval_s: float = Field(default=20.0, gt=0)
    ws_ping_timeout_s: float = Field(default=20.0, gt=0)
    """A socket that does not answer a protocol ping within this time is closed."""
    ws_compression: bool = False
    """Offer permessage-deflate. Event frames are small JSON; compressing each one costs more CPU
    than it saves bandwidth on most links (and a compressed frame takes uvicorn's slower path, not
    the protocol's direct write), so it is off unless clients are on slow networks."""
    cors_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names, besides loopback ones, that a server on loopback without API keys answers to
    (a proxy on the same machine that keeps the client's ``Host``). Any other ``Host`` is refused:
    a web page whose name was re-pointed at 127.0.0.1 (DNS rebinding) could otherwise read and use
    the server as if it were its own site."""
    chat_stop_on_disconnect: bool = True
    """Stop the run of a ``/v1/chat/completions`` request (streamed or not) when its client goes
    away before the end, as an OpenAI client that stops reading or gives up waiting expects (the
    partial answer is kept, status ``stopped``).
    Off: the run goes on, and its result stays readable at ``/v1/runs/{id}`` (``X-Run-Id``)."""


class AgentSettings(_Section):
    """One declared agent, ``[agents.NAME]``: a strategy, a model, tools and instructions.

    Example::

        [agents.researcher]
        description = "Finds facts in the documents and on the web"
        reasoning = "toolcall"
        llm = "openai:gpt-4o-mini"
        tools = ["docsearch", "web_search", "mcp:catalog"]
        instructions = ["Quote the sources you use."]
        settings = { max_rounds = 4, require_tool_call = true }

        [agents.writer]
        reasoning = "react"
        tools = ["agent:researcher"]
    """

    description: str = ""
    """What the agent is for; a parent agent reads it as the description of this agent's tool."""
    reasoning: str = "react"
    """Strategy id (``qa``, ``decompose``, ``react``, ``toolcall``, ``rewoo``, ``ircot`` or a plugin's)."""
    llm: str = ""
    """``provider:model``; empty means ``[llm]`` (or the model handed to ``Agent.from_config``)."""
    planner_llm: str = ""
    """Model for planning (ReWOO); empty means ``llm``."""
    solver_llm: str = ""
    """Model for the final synthesis (ReWOO); empty means ``llm``."""
    tools: list[str] = Field(default_factory=list)
    """Tool ids, ``mcp:SERVER`` for every tool of a ``[[tools.mcp_servers]]`` entry, ``agent:OTHER`` for
    another declared agent offered as a tool."""
    instructions: list[str] | str = Field(default_factory=list)
    """Appended to the strategy's built-in prompts."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The strategy's settings (``max_rounds``, ``require_tool_call``, ...), validated at load time."""
    kb: bool = True
    """Search the knowledge base the agent runs with (tool-using strategies get ``docsearch``)."""
    language: str | None = None
    """Answer language; ``None`` follows each question."""
    timeout_s: float = Field(default=300.0, gt=0)
    """How long a parent agent waits for this one when it calls it as a tool."""
    approvals: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    """Tool name (or ``mcp:SERVER``) -> whether a person approves this agent's calls of it; over
    ``[approvals]`` for the runs of this agent."""


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
