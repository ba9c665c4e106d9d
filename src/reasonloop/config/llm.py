"""The ``[llm]`` section of the configuration: which model answers, where one is looked for on this
machine, and how patiently we talk to it. Re-exported by :mod:`reasonloop.config`, which most code
imports it from."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from reasonloop.config.tools import Section

__all__ = ["LLMSettings"]

_Port = Annotated[int, Field(ge=1, le=65535)]


class LLMSettings(Section):
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
