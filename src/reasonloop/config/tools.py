"""The ``[tools]`` and ``[mcp]`` sections of the configuration: what the built-in tools may do, the MCP
servers whose tools join the toolbox, and reasonloop's own MCP endpoint; and :class:`Section`, the
base of every section. Re-exported by :mod:`reasonloop.config`, which most code imports them from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ApprovalPolicy = Literal["never", "always", "once"]
"""Whether a person approves a tool's calls: ``never`` (they run), ``always`` (every call waits
for an answer) or ``once`` (the first call of the run waits; once it is confirmed, the tool's
later calls in the same run do not)."""


class Section(BaseModel):
    """A configuration section: unknown keys are errors, and assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class HTTPToolSettings(Section):
    """The ``http_request`` tool: what a model may fetch, and how much."""

    enabled: bool = False
    """Offer ``http_request`` to models at all."""
    allow_hosts: list[str] = Field(default_factory=list)
    """Exceptions to the private-address block: host names, ``*.suffix`` wildcards, IPs or CIDR networks."""
    methods: list[str] = Field(default_factory=lambda: ["GET", "HEAD"])
    """HTTP methods the model may use."""
    max_bytes: int = Field(default=1_000_000, gt=0)
    """Response bodies are cut after this many bytes."""
    timeout_s: float = Field(default=20.0, gt=0)
    """Whole request, redirects included."""
    max_redirects: int = Field(default=5, ge=0)
    host_secrets: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Host -> {header name: environment variable}; the header is added to requests to that host only."""


class WebSearchSettings(Section):
    """The ``web_search`` tool: offered only when a backend is chosen."""

    backend: Literal["", "searxng", "brave", "tavily", "serper"] = ""
    base_url: str = ""
    """Endpoint; empty means the backend's public API (SearXNG needs one)."""
    api_key_env: str = ""
    """Environment variable holding the backend's API key (Brave, Tavily, Serper)."""
    max_results: int = Field(default=5, gt=0)
    timeout_s: float = Field(default=15.0, gt=0)


class WikipediaSettings(Section):
    """The ``wikipedia`` tool (MediaWiki API)."""

    enabled: bool = False
    base_url: str = "https://en.wikipedia.org/w/api.php"
    """The wiki's ``api.php`` endpoint."""
    max_results: int = Field(default=3, gt=0)
    timeout_s: float = Field(default=15.0, gt=0)


class MCPServerSettings(Section):
    """One MCP server whose tools join the toolbox: a ``command`` (stdio) or a ``url`` (streamable HTTP)."""

    name: str
    command: str = ""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the server process."""
    cwd: str = ""
    url: str = ""
    headers_env: dict[str, str] = Field(default_factory=dict)
    """Header name -> environment variable, sent to a streamable-HTTP server (e.g. Authorization)."""
    allow: list[str] | None = None
    """Names of the server's tools to offer; ``None`` offers all."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Per tool call."""
    connect_timeout_s: float = Field(default=20.0, gt=0)
    """Start, handshake and tool discovery."""
    retry_interval_s: float = Field(default=30.0, gt=0)
    """After a failed start, runs go on without the server and it is tried again in the
    background, at most once per this many seconds."""
    approval: ApprovalPolicy | None = None
    """Whether a person approves the calls of this server's tools (unset: ``[approvals]`` decides)."""

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
        return self


class MCPSettings(Section):
    """reasonloop as an MCP server: ``reasonloop mcp`` (stdio) and ``/mcp`` on ``reasonloop serve``."""

    http: bool = True
    """Mount the streamable-HTTP endpoint on ``reasonloop serve`` (behind the same API keys)."""
    path: str = Field(default="/mcp", pattern=r"^/[\w\-/]*$")
    ingest_roots: list[str] = Field(default_factory=list)
    """Directories the ``ingest`` tool may read (with everything below them); relative ones start
    at the working directory. Empty (the default): ``ingest`` reads no local path until roots are
    set, so a server started from ``/`` or a home directory does not offer every readable file."""
    ingest_urls: bool = False
    """Let ``ingest`` fetch http(s) URLs."""
    ingest_over_http: bool = False
    """Offer ``ingest`` over HTTP as well (stdio always offers it)."""
    allow_delete: bool = False
    """Offer ``delete_document``."""


class ApprovalSettings(Section):
    """``[approvals]``: which tool calls wait for a person to confirm, modify or reject them.

    Example::

        [approvals]
        side_effects = "always"        # http_request, MCP tools not marked read-only
        timeout_s = 600                # unanswered for 10 minutes: rejected
        tools = { docsearch = "never", "mcp:tickets" = "once" }
    """

    default: ApprovalPolicy = "never"
    """The policy of a tool that nothing else names."""
    side_effects: ApprovalPolicy | None = None
    """The policy of tools marked as having side effects (``http_request``; an MCP tool whose server
    does not mark it read-only), when the tool has no policy of its own; unset: ``default``."""
    tools: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    """Tool name (or ``mcp:SERVER`` for every tool of that server) -> policy."""
    timeout_s: float | None = Field(default=None, gt=0)
    """A call unanswered this long is rejected (the model reads why); unset: it waits for an answer."""
    poll_interval_s: float = Field(default=0.5, gt=0, le=10)
    """How often a waiting run looks for an answer given on another server instance."""


class FeedbackSettings(Section):
    """Where feedback on answers is kept and how much of it guides later prompts."""

    path: str = ""
    """SQLite file; empty means ``feedback.sqlite`` under ``[kb] path``."""
    recent: int = Field(default=5, ge=0)
    """How many recent judgements shape the guidance injected into system prompts."""


class ToolsSettings(Section):
    """Built-in tools beyond document search, and MCP servers."""

    http: HTTPToolSettings = Field(default_factory=HTTPToolSettings)
    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings)
    wikipedia: WikipediaSettings = Field(default_factory=WikipediaSettings)
    mcp_servers: list[MCPServerSettings] = Field(default_factory=list)
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
