"""Plugin registries keyed by kind and id.

The package's own plugins are the rows of :mod:`reasonloop.plugin_table`, listed here without
being imported. Other packages' plugins load from a Python entry point in the group
``reasonloop.<kind>`` (the entry-point name is the id), or from a ``package.module:Attribute``
path listed under ``[plugins.paths]`` in the config. Objects registered in code join the same
table. Entries are loaded lazily: asking for one plugin imports only that plugin, and a plugin
that fails to import is reported by name (:attr:`PluginEntry.error`) without taking the others
down.

Listing plugins need not import them: a built-in is described by its row, and a package may
declare, in the entry-point group ``reasonloop.descriptions``, a mapping from its plugins'
targets to their one-line descriptions; :meth:`Registry.listing` describes every plugin so
declared without importing it, importing only the others.

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

from pydantic import BaseModel, Field

from reasonloop import plugin_table
from reasonloop.errors import DuplicatePlugin, PluginLoadFailed, PluginNotFound, ReasonLoopError
from reasonloop.plugin_table import LANGUAGES, PluginRow

__all__ = [
    "DESCRIPTIONS_GROUP",
    "KINDS",
    "PluginEntry",
    "PluginInfo",
    "PluginText",
    "Registry",
    "load_dotted",
    "resolve",
]

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("reasoning", "tool", "index", "llm", "embedder", "reranker", "run_store")
"""Every kind of plugin; the entry-point group of kind ``k`` is ``reasonloop.k``."""

DESCRIPTIONS_GROUP = "reasonloop.descriptions"
"""Entry-point group of description tables: each names a mapping of plugin target -> description."""


class PluginText(BaseModel):
    """A plugin's name and description in one language."""

    name: str = ""
    description: str = ""


class PluginInfo(BaseModel):
    """How a plugin introduces itself (strategies and tools set it as ``info``).

    ``name`` and ``description`` are English; ``translations`` holds them in the interface's other
    languages (:data:`~reasonloop.plugin_table.LANGUAGES`), by language code. A built-in plugin
    takes all of it from its row of the plugin table (:meth:`declared`).
    """

    id: str
    name: str = ""
    description: str = ""
    translations: dict[str, PluginText] = Field(default_factory=dict)

    @classmethod
    def declared(cls, kind: str, plugin_id: str) -> PluginInfo:
        """The info of the built-in plugin ``kind``/``plugin_id``, from its row of the plugin table.

        Raises:
            PluginNotFound: the table has no such row.
        """
        row = _builtin_row(kind, plugin_id)
        if row is None:
            raise PluginNotFound(f"the plugin table has no {kind} plugin {plugin_id!r}", kind=kind, id=plugin_id)
        return cls.from_row(row)

    @classmethod
    def from_row(cls, row: PluginRow) -> PluginInfo:
        translations = {lang: PluginText(name=row.text(lang)[0], description=row.text(lang)[1]) for lang in LANGUAGES}
        del translations["en"]
        return cls(id=row.id, name=row.name, description=row.description, translations=translations)


def _builtin_row(kind: str, plugin_id: str) -> PluginRow | None:
    # The table is read where it is looked up, so a test may extend it with a row.
    return next((r for r in plugin_table.PLUGINS if (r.kind, r.id) == (kind, plugin_id)), None)


@dataclass
class PluginEntry:
    """One row of a registry: where a plugin comes from, and the object once loaded."""

    kind: str
    id: str
    target: str
    """``module:attribute`` it loads from, or ``<code>`` for objects registered directly."""
    source: str
    """``builtin`` (a row of the plugin table), ``entry_point``, ``config`` or ``code``."""
    obj: Any = None
    error: ReasonLoopError | None = None
    loaded: bool = False
    row: PluginRow | None = None
    """The plugin table's row of a built-in plugin."""
    declared_description: str | None = None
    """The description a description table gives the target, set by :meth:`Registry.listing`."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def description(self) -> str:
        """A built-in's row's description; what another loaded plugin says of itself; before it is
        loaded, what its description table says."""
        if self.row is not None:
            return self.row.description
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


def _others(eps: Iterable[EntryPoint], ours: dict[int, bool]) -> list[EntryPoint]:
    """The entry points not declared by reasonloop itself. Its own are an earlier install's, whose
    plugins the plugin table now declares (a stale one would otherwise shadow a row, or name a moved
    module). Only the distributions of entry points naming a target of ours have their metadata read,
    once each (``ours``: distribution -> whether it is reasonloop, by ``id``)."""
    out = []
    for ep in eps:
        if ep.value.startswith("reasonloop."):
            dist = getattr(ep, "dist", None)
            if id(dist) not in ours:
                name = getattr(dist, "name", None) or ""
                ours[id(dist)] = name.lower().replace("_", "-") == "reasonloop"
            if ours[id(dist)]:
                continue
        out.append(ep)
    return out


class Registry:
    """All plugins by kind and id.

    Args:
        dotted_paths: Kind -> dotted paths to load (the ``[plugins.paths]`` config table).
        use_entry_points: List the built-in plugins (the plugin table's rows) and discover other
            packages' ``reasonloop.<kind>`` entry points. Off, the registry lists only what is
            registered in code or by path, and still resolves a built-in by id (some tests).
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
            self.add_builtins()
            found = entry_points()  # one scan of the installed packages for every group
            ours: dict[int, bool] = {}
            for kind in KINDS:
                for ep in _others(found.select(group=f"reasonloop.{kind}"), ours):
                    self._add(PluginEntry(kind=kind, id=ep.name, target=ep.value, source="entry_point"))
            self._description_tables = _others(found.select(group=DESCRIPTIONS_GROUP), ours)
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
        """List the package's own plugins (the plugin table's rows) this registry lacks (a bare one).

        :meth:`get` resolves them anyway; this makes listings (``ids``, ``entries``) show them.
        """
        for row in plugin_table.PLUGINS:
            entries = self._entries[row.kind]
            if row.id not in entries:
                entries[row.id] = PluginEntry(kind=row.kind, id=row.id, target=row.target, source="builtin", row=row)

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
            row = _builtin_row(kind, plugin_id)
            if row is not None:
                return load_dotted(row.target)
            builtins = {r.id for r in plugin_table.PLUGINS if r.kind == kind}
            known = ", ".join(sorted({*self._entries[kind], *builtins})) or "none"
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
        """Every entry (of one kind, or all), described without importing it where the plugin
        table or a description table describes it; the others are loaded as :meth:`entries` loads
        them. Problems (duplicates, bad kinds) are listed too. An entry described this way is not
        imported, so a plugin that would fail to import shows no error here: :meth:`entries` finds it.
        """
        kinds = [kind] if kind else list(KINDS)
        declared = self._declared_descriptions()
        out: list[PluginEntry] = []
        for k in kinds:
            self._check_kind(k)
            for entry in self._entries[k].values():
                if not entry.loaded and entry.row is None:
                    entry.declared_description = declared.get(entry.target)
                    if entry.declared_description is None:
                        self._load(entry)
                out.append(entry)
        out.extend(p for p in self.problems if kind is None or p.kind == kind)
        return out

    def _declared_descriptions(self) -> dict[str, str]:
        """Target -> description from every installed description table.

        A table that fails to load or is not a mapping of strings is skipped with a warning:
        the plugins it meant to describe are then imported to describe them.
        """
        if self._descriptions is None:
            merged: dict[str, str] = {}
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
        PluginNotFound: neither the registry nor the plugin table knows it.
        PluginLoadFailed: it exists but cannot be imported.
    """
    return (registry or Registry.default()).get(kind, plugin_id)
