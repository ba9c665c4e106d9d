"""Finding the models a user already serves on this machine.

With ``[llm] provider = "auto"`` and nothing else choosing a model, :func:`discover` asks, all at
once and on loopback only (127.0.0.1), a local Ollama (``/api/tags``, then ``/api/show`` for each
model) and OpenAI-compatible servers at the usual ports (LM Studio 1234, llama.cpp's server 8080,
vLLM 8000: ``GET /v1/models``, plus llama.cpp's ``/props`` and LM Studio's ``/api/v0/models`` for
what they add). Every port is first tried with a plain connection, all at once; only those that
accept are asked over HTTP, so a machine serving nothing costs a fraction of a millisecond
(benchmarks/discovery.py).

Whether a model follows instructions is judged, in this order:

1. **What the server says.** Ollama's ``/api/show``: a prompt template that is empty or only
   ``{{ .Prompt }}`` is a base model's, any other template (roles, turn markers) an
   instruction-tuned one's; ``capabilities`` without ``completion`` but with ``embedding`` is an
   embedding model. llama.cpp's ``/props``: a chat template means instruction-tuned. LM Studio's
   ``type = "embeddings"`` is an embedding model.
2. **The model's name**, when the server says nothing: words such as ``instruct``, ``chat``, ``it``
   mean instruction-tuned; ``base``, ``pt``, ``text`` mean base; ``embed``, ``rerank`` mean not a
   chat model (:func:`kind_from_name`). Otherwise the kind is ``unknown``.

:meth:`Discovery.choice` takes an instruction-tuned model (the server's word first, then the
name's), else one of unknown kind, never a base or embedding model; servers count in the order
they are listed in the settings (Ollama first). Results are kept for :data:`CACHE_TTL_S`, so a
server listing models per request does not probe every time.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from reasonloop.config import LLMSettings
from reasonloop.llm._port_check import listening

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CACHE_TTL_S",
    "Discovery",
    "FoundModel",
    "Probe",
    "discover",
    "discover_sync",
    "kind_from_name",
    "last_found",
]

Kind = Literal["instruct", "base", "embedding", "unknown"]
ServerKind = Literal["ollama", "openai"]

CACHE_TTL_S = 30.0
"""How long a discovery is reused: long enough for a burst of requests, short enough that a model
pulled or a server started a minute ago is seen."""
MAX_MODELS_SHOWN = 64
"""Ollama models read with ``/api/show`` per server; more are listed with what their name says."""
LOOPBACK = "127.0.0.1"

_INSTRUCT_WORDS = frozenset({"instruct", "instruction", "chat", "it", "sft", "dpo", "rlhf", "assistant", "hermes"})
_BASE_WORDS = frozenset({"base", "pt", "pretrain", "pretrained", "text"})
_NOT_CHAT_WORDS = frozenset({"embed", "embedding", "embeddings", "rerank", "reranker", "bge", "e5", "minilm"})
_WORD = re.compile(r"[a-z0-9]+")
_BARE_TEMPLATES = frozenset({"", "{{ .Prompt }}", "{{.Prompt}}"})


def kind_from_name(name: str) -> Kind:
    """What a model's name says about it: ``embedding`` (embedders and rerankers), ``instruct``,
    ``base`` or ``unknown``. The last resort, used when the server says nothing."""
    words = set(_WORD.findall(name.lower()))
    if words & _NOT_CHAT_WORDS:
        return "embedding"
    if words & _INSTRUCT_WORDS:
        return "instruct"
    if words & _BASE_WORDS:
        return "base"
    return "unknown"


@dataclass(frozen=True)
class FoundModel:
    """One model a local server offers, and what is known about it."""

    server: ServerKind
    """The API it is reached with: ``ollama`` (native) or ``openai`` (OpenAI-compatible)."""
    base_url: str
    """The provider's endpoint (``http://127.0.0.1:11434``, ``http://127.0.0.1:1234/v1``)."""
    name: str
    kind: Kind
    kind_from: Literal["server", "name"]
    """Who said what ``kind`` is: the server's metadata, or the model's name."""
    tool_calls: bool | None = None
    """Whether the server says the model takes native tool calls; ``None``: it does not say."""
    context_length: int | None = None
    """Tokens of context, where the server says."""

    @property
    def spec(self) -> str:
        """``provider:model``, as ``--llm`` takes it (with :attr:`base_url` as ``[llm] base_url``)."""
        return f"{self.server}:{self.name}"

    @property
    def id(self) -> str:
        """Names this model among every server's: ``provider:model@host:port``."""
        return f"{self.spec}@{urlsplit(self.base_url).netloc}"

    def llm_settings(self, settings: LLMSettings) -> LLMSettings:
        """``settings`` (timeouts, retries, sampling) pointed at this model."""
        extra = dict(settings.extra)
        if self.context_length:
            extra.setdefault("context_window", self.context_length)
        if self.tool_calls is False:  # the server says so: tool-calling strategies use ReAct's text format
            extra.setdefault("native_tools", False)
        return settings.model_copy(
            update={"provider": self.server, "model": self.name, "base_url": self.base_url, "extra": extra}
        )

    def describe(self) -> str:
        """``instruction-tuned (server), tool calls, 8192 tokens`` for people."""
        kind = {"instruct": "instruction-tuned", "base": "base model", "embedding": "not a chat model"}
        parts = [
            f"{kind.get(self.kind, 'kind unknown')} ({'server says' if self.kind_from == 'server' else 'by name'})"
        ]
        if self.tool_calls is not None:
            parts.append("tool calls" if self.tool_calls else "no tool calls")
        if self.context_length:
            parts.append(f"{self.context_length} tokens")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "spec": self.spec,
            "server": self.server,
            "base_url": self.base_url,
            "name": self.name,
            "kind": self.kind,
            "kind_from": self.kind_from,
            "tool_calls": self.tool_calls,
            "context_length": self.context_length,
        }


@dataclass(frozen=True)
class Probe:
    """One server address that was asked, and what came of it."""

    server: ServerKind
    url: str
    answered: bool
    error: str = ""
    """Why nothing usable came back (``connection refused``, ``HTTP 401``, ...)."""


_RANK = {("instruct", "server"): 0, ("instruct", "name"): 1, ("unknown", "name"): 2}
"""The order of preference of :meth:`Discovery.choice`; kinds not listed are never chosen."""


@dataclass(frozen=True)
class Discovery:
    """What one look around found."""

    models: tuple[FoundModel, ...] = ()
    probes: tuple[Probe, ...] = ()
    elapsed_s: float = 0.0
    at: float = field(default_factory=time.monotonic)

    def choice(self, name: str = "") -> FoundModel | None:
        """The model to use: the one called ``name`` when given, else the best by the module's rule."""
        if name:
            return next((m for m in self.models if name in (m.name, m.spec, m.id)), None)
        ranked = [
            (rank, i) for i, m in enumerate(self.models) if (rank := _RANK.get((m.kind, m.kind_from))) is not None
        ]
        return self.models[min(ranked)[1]] if ranked else None

    def find(self, model_id: str) -> FoundModel | None:
        """The model whose :attr:`FoundModel.id` is ``model_id``."""
        return next((m for m in self.models if m.id == model_id), None)


def _key(settings: LLMSettings) -> tuple[Any, ...]:
    return (*_ports(settings), settings.discover_timeout_s)


def last_found(settings: LLMSettings) -> Discovery | None:
    """The latest discovery with these settings, however old (``None``: none yet)."""
    return _cache.get(_key(settings))


def _ports(settings: LLMSettings) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ollama = list(settings.discover_ollama_ports)
    configured = urlsplit(settings.ollama_url)
    if configured.hostname in ("127.0.0.1", "localhost", "::1") and configured.port and configured.port not in ollama:
        ollama.append(configured.port)
    return tuple(ollama), tuple(p for p in settings.discover_openai_ports if p not in ollama)


_cache: dict[tuple[Any, ...], Discovery] = {}


def _kept(key: tuple[Any, ...], fresh: bool) -> Discovery | None:
    kept = _cache.get(key)
    if kept is not None and not fresh and time.monotonic() - kept.at < CACHE_TTL_S:
        return kept
    return None


async def discover(settings: LLMSettings | None = None, *, fresh: bool = False) -> Discovery:
    """Ask every configured loopback port, concurrently, which models it serves.

    Args:
        settings: ``[llm]`` settings: the ports and the timeout of each request.
        fresh: Ask again even when a result younger than :data:`CACHE_TTL_S` is kept.
    """
    settings = settings or LLMSettings()
    key = _key(settings)
    kept = _kept(key, fresh)
    if kept is not None:
        return kept
    import asyncio

    started = time.perf_counter()
    ports = (*key[0], *key[1])
    open_ports = await asyncio.to_thread(listening, LOOPBACK, ports, settings.discover_timeout_s)
    result = await _ask(settings, open_ports, started)
    _cache[key] = result
    return result


def discover_sync(settings: LLMSettings | None = None, *, fresh: bool = False) -> Discovery:
    """:func:`discover` from synchronous code (in a worker thread when an event loop runs here).

    When no port accepts a connection, no event loop is started at all.
    """
    settings = settings or LLMSettings()
    key = _key(settings)
    kept = _kept(key, fresh)
    if kept is not None:
        return kept
    started = time.perf_counter()
    open_ports = listening(LOOPBACK, (*key[0], *key[1]), settings.discover_timeout_s)
    if not open_ports:
        result = _refused(settings, started)
    else:
        import asyncio
        import concurrent.futures

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            result = asyncio.run(_ask(settings, open_ports, started))
        else:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                result = pool.submit(asyncio.run, _ask(settings, open_ports, started)).result()
    _cache[key] = result
    return result


REFUSED = "connection refused"


def _refused(settings: LLMSettings, started: float) -> Discovery:
    ollama_ports, openai_ports = _ports(settings)
    probes = [Probe("ollama", f"http://{LOOPBACK}:{p}", False, REFUSED) for p in ollama_ports]
    probes += [Probe("openai", f"http://{LOOPBACK}:{p}/v1", False, REFUSED) for p in openai_ports]
    return Discovery((), tuple(probes), time.perf_counter() - started)


async def _ask(settings: LLMSettings, open_ports: set[int], started: float) -> Discovery:
    """Ask the ports that accepted a connection over HTTP; the others refused it."""
    import asyncio
    import ssl

    import httpx

    ollama_ports, openai_ports = _ports(settings)

    async def ollama(client: httpx.AsyncClient, port: int) -> tuple[Probe, list[FoundModel]]:
        base = f"http://{LOOPBACK}:{port}"
        return await _ollama(client, base) if port in open_ports else (Probe("ollama", base, False, REFUSED), [])

    async def openai(client: httpx.AsyncClient, port: int) -> tuple[Probe, list[FoundModel]]:
        root = f"http://{LOOPBACK}:{port}"
        if port not in open_ports:
            return Probe("openai", f"{root}/v1", False, REFUSED), []
        return await _openai(client, root)

    # Plain HTTP to loopback only: no proxy from the environment, and no certificate store to load.
    no_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    timeout = httpx.Timeout(settings.discover_timeout_s)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False, verify=no_tls) as client:
        found = await asyncio.gather(
            *(ollama(client, port) for port in ollama_ports), *(openai(client, port) for port in openai_ports)
        )
    models = tuple(m for _, ms in found for m in ms)
    return Discovery(models, tuple(p for p, _ in found), time.perf_counter() - started)


async def _get(client: httpx.AsyncClient, url: str) -> tuple[Any, str]:
    """``(json, "")`` or ``(None, why not)``."""
    import httpx

    try:
        response = await client.get(url)
    except httpx.ConnectError:
        return None, REFUSED
    except httpx.TimeoutException:
        return None, "timed out"
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if response.status_code != 200:
        return None, f"HTTP {response.status_code}"
    try:
        return response.json(), ""
    except ValueError:
        return None, "not JSON"


async def _ollama(client: httpx.AsyncClient, base: str) -> tuple[Probe, list[FoundModel]]:
    import asyncio

    tags, error = await _get(client, f"{base}/api/tags")
    listed = tags.get("models") if isinstance(tags, dict) else None
    if not isinstance(listed, list):
        return Probe("ollama", base, False, error or "unexpected reply"), []
    names = [m.get("name") or m.get("model") for m in listed if isinstance(m, dict)]
    names = [n for n in names if isinstance(n, str) and n]
    shown = await asyncio.gather(*(_ollama_show(client, base, n) for n in names[:MAX_MODELS_SHOWN]))
    rest = [FoundModel("ollama", base, n, kind_from_name(n), "name") for n in names[MAX_MODELS_SHOWN:]]
    return Probe("ollama", base, True), [*shown, *rest]


async def _ollama_show(client: httpx.AsyncClient, base: str, name: str) -> FoundModel:
    import httpx

    try:
        response = await client.post(f"{base}/api/show", json={"model": name})
        show = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        show = None
    if not isinstance(show, dict):
        return FoundModel("ollama", base, name, kind_from_name(name), "name")
    capabilities = show.get("capabilities")
    template = show.get("template")
    kind: Kind
    if isinstance(capabilities, list) and "embedding" in capabilities and "completion" not in capabilities:
        kind = "embedding"
    elif isinstance(template, str):
        kind = "base" if template.strip() in _BARE_TEMPLATES else "instruct"
    else:
        return FoundModel("ollama", base, name, kind_from_name(name), "name", None, _context_length(show))
    if isinstance(capabilities, list):
        tools: bool | None = "tools" in capabilities
    else:
        tools = ".Tools" in template if isinstance(template, str) else None
    return FoundModel("ollama", base, name, kind, "server", tools, _context_length(show))


def _context_length(show: dict[str, Any]) -> int | None:
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and _positive_int(value):
                return value
    return None


_CONTEXT_KEYS = ("max_model_len", "max_context_length", "context_length")
"""Where OpenAI-compatible servers put a model's context: vLLM, LM Studio, others."""


async def _openai(client: httpx.AsyncClient, root: str) -> tuple[Probe, list[FoundModel]]:
    import asyncio

    base = f"{root}/v1"
    listed, error = await _get(client, f"{base}/models")
    entries = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(entries, list):
        return Probe("openai", base, False, error or "unexpected reply"), []
    # reasonloop's own server lists its strategies as models: never a model to answer with.
    entries = [
        e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str) and e.get("owned_by") != "reasonloop"
    ]
    if not entries:
        return Probe("openai", base, True, "no models" if not listed.get("data") else "reasonloop's own server"), []
    (props, _), (lmstudio, _) = await asyncio.gather(
        _get(client, f"{root}/props"), _get(client, f"{root}/api/v0/models")
    )
    described = lmstudio.get("data") if isinstance(lmstudio, dict) else None
    by_id = {m.get("id"): m for m in described if isinstance(m, dict)} if isinstance(described, list) else {}
    template = props.get("chat_template") if isinstance(props, dict) else None
    models = []
    for entry in entries:
        name = entry["id"]
        extra = by_id.get(name, {})
        context = _first_int(entry, extra, entry.get("meta"))
        tools = "tool_use" in extra.get("capabilities", []) if isinstance(extra.get("capabilities"), list) else None
        if extra.get("type") == "embeddings":
            kind, source = "embedding", "server"
        elif isinstance(template, str) and template.strip() and len(entries) == 1:
            kind, source = "instruct", "server"
        else:
            kind, source = kind_from_name(name), "name"
        models.append(FoundModel("openai", base, name, kind, source, tools, context))  # type: ignore[arg-type]
    return Probe("openai", base, True), models


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _first_int(*sources: Any) -> int | None:
    for source in sources:
        if isinstance(source, dict):
            for key in (*_CONTEXT_KEYS, "n_ctx_train"):
                value = source.get(key)
                if _positive_int(value):
                    return value
    return None
