"""The built-in strategies and tools, resolvable by id like third-party plugins.

The package declares them as entry points (``reasonloop.reasoning`` / ``reasonloop.tool``);
:func:`register_builtins` adds any that are missing to a registry, so a registry built
without entry points (tests, an uninstalled checkout) still resolves them.
"""

from __future__ import annotations

from typing import Any

from reasonloop.errors import PluginNotFound
from reasonloop.registry import Registry, load_dotted

__all__ = ["BUILTIN_REASONING", "BUILTIN_TOOLS", "register_builtins", "resolve"]

BUILTIN_REASONING: dict[str, str] = {
    "qa": "reasonloop.reasoning.qa:QAReasoning",
    "decompose": "reasonloop.reasoning.decompose:DecomposeReasoning",
    "react": "reasonloop.reasoning.react:ReActReasoning",
    "toolcall": "reasonloop.reasoning.toolcall:ToolCallReasoning",
    "rewoo": "reasonloop.reasoning.rewoo:ReWOOReasoning",
}
BUILTIN_TOOLS: dict[str, str] = {
    "docsearch": "reasonloop.tools.docsearch:DocSearchTool",
}
_BUILTINS = {"reasoning": BUILTIN_REASONING, "tool": BUILTIN_TOOLS}


def register_builtins(registry: Registry) -> None:
    """Register every built-in strategy and tool the registry does not know yet."""
    for kind, table in _BUILTINS.items():
        known = set(registry.ids(kind))
        for plugin_id, target in table.items():
            if plugin_id not in known:
                registry.register(kind, plugin_id, load_dotted(target))


def resolve(kind: str, plugin_id: str, registry: Registry | None = None) -> Any:
    """The plugin ``kind``/``plugin_id`` from the registry, falling back to the built-ins.

    Raises:
        PluginNotFound: neither the registry nor the built-ins know it.
    """
    registry = registry or Registry.default()
    try:
        return registry.get(kind, plugin_id)
    except PluginNotFound:
        target = _BUILTINS.get(kind, {}).get(plugin_id)
        if target is None:
            raise
        return load_dotted(target)
