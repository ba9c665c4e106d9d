"""What the arguments of the MCP server's tools may reach: the files ``ingest`` may read (under
``[mcp] ingest_roots``, none until they are set) and the conditions ``search``'s ``filters`` say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonloop.errors import RequestInvalid, ToolBlocked
from reasonloop.kb.base import Filter
from reasonloop.kb.ingest.loaders import walk

__all__ = ["allowed_sources", "search_filters"]


def allowed_sources(source: str, roots: list[str], urls: bool, kb_root: str) -> list[str]:
    """What ingest may read of ``source``: the URL, the file, or a folder's files. Every path is
    checked after its links are resolved, a folder's files one by one (a link inside an allowed
    folder that leads out of it is left out), and nothing under the knowledge bases' own folder
    (``kb_root``: every tenant's index and uploads) is read.

    Raises:
        ToolBlocked: a URL while URLs are off, a path while no root is set, or a path outside every
            allowed root.
    """
    if source.startswith(("http://", "https://")):
        if not urls:
            raise ToolBlocked(f"ingesting URLs is off until [mcp] ingest_urls = true: {source}", source=source)
        return [source]
    if not roots:
        raise ToolBlocked(
            f"ingesting local paths is off until [mcp] ingest_roots names the folders ingest may read "
            f'(for example ingest_roots = ["~/notes"] in reasonloop.toml, '
            f"REASONLOOP_MCP__INGEST_ROOTS='[\"~/notes\"]', or reasonloop mcp --ingest-root ~/notes): {source}",
            source=source,
        )
    allowed = [Path(root).expanduser().resolve() for root in roots]
    barred = Path(kb_root).expanduser().resolve()

    def readable(path: Path) -> bool:
        return any(path.is_relative_to(root) for root in allowed) and not path.is_relative_to(barred)

    path = Path(source).expanduser().resolve()
    if not readable(path):
        raise ToolBlocked(
            f"{source} is outside the allowed roots ([mcp] ingest_roots: {roots}) or inside the knowledge base",
            source=source,
        )
    if not path.is_dir():
        return [str(path)]
    return [str(f) for f in (p.resolve() for p in walk(path)) if readable(f)]


_FILTER_OPS = ("eq", "in", "contains", "gte", "lte")
"""What a condition of ``search``'s ``filters`` may say about a field besides a plain value."""


def search_filters(filters: dict[str, Any] | None) -> list[Filter] | None:
    """``search``'s ``filters`` as the knowledge base's conditions: ``{"field": value}`` is equality,
    ``{"field": {"gte": low, "lte": high}}`` a range, ``{"field": {"in": [...]}}`` and
    ``{"field": {"contains": value}}`` as their names say.

    Raises:
        RequestInvalid: a condition with another operator (it would match nothing, silently).
    """
    if filters is None:
        return None
    out: list[Filter] = []
    for name, condition in filters.items():
        if not isinstance(condition, dict):
            out.append(Filter(field=name, op="eq", value=condition))
            continue
        unknown = sorted(set(condition) - set(_FILTER_OPS))
        if unknown or not condition:
            raise RequestInvalid(
                f"filters.{name}: unknown operator {unknown[0] if unknown else '(none)'}; use a value, or an object "
                f"with {', '.join(_FILTER_OPS)}",
                field=f"filters.{name}",
            )
        if "in" in condition and not isinstance(condition["in"], list):
            raise RequestInvalid(f"filters.{name}.in: needs a list of values", field=f"filters.{name}.in")
        for op in ("eq", "in", "contains"):
            if op in condition:
                out.append(Filter(field=name, op=op, value=condition[op]))
        if "gte" in condition or "lte" in condition:
            out.append(Filter(field=name, op="range", value=[condition.get("gte"), condition.get("lte")]))
    return out
