"""Thinking modes: a request names how hard to think (``fast`` … ``research``, or ``auto``) instead of a strategy.

Each mode is a row of :data:`reasonloop.plugin_table.MODES`: the strategy it runs and the settings
it sets. :func:`resolve_mode` turns a mode into that strategy class and settings; a request's own
settings go over the mode's. A request names a strategy or a mode, not both:
:func:`check_choice` refuses both at once.

Example::

    strategy, settings = resolve_mode("deep")   # ReActReasoning, {"max_rounds": 10, "max_tool_calls": 16}
"""

from __future__ import annotations

from typing import Any

from reasonloop.errors import ModeInvalid, PluginNotFound
from reasonloop.plugin_table import MODES, ModeRow
from reasonloop.reasoning.base import Reasoning
from reasonloop.registry import Registry, resolve

__all__ = ["MODE_IDS", "check_choice", "mode_row", "resolve_mode"]

MODE_IDS: tuple[str, ...] = tuple(row.id for row in MODES)


def mode_row(mode: str) -> ModeRow:
    """The row of ``mode``.

    Raises:
        ModeInvalid: no mode has that name; the message lists the modes.
    """
    for row in MODES:
        if row.id == mode:
            return row
    raise ModeInvalid(f"unknown mode {mode!r}: the modes are {', '.join(MODE_IDS)}")


def resolve_mode(mode: str, registry: Registry | None = None) -> tuple[type[Reasoning], dict[str, Any]]:
    """The strategy class ``mode`` runs and the settings it sets.

    Raises:
        ModeInvalid: an unknown mode, or one whose strategy is not installed ("strategy research is
            not available").
    """
    row = mode_row(mode)
    try:
        strategy = resolve("reasoning", row.strategy, registry)
    except PluginNotFound:
        raise ModeInvalid(
            f"mode {mode!r} needs strategy {row.strategy}, and strategy {row.strategy} is not available "
            "in this installation"
        ) from None
    return strategy, dict(row.settings)


def check_choice(reasoning: object, mode: str | None) -> None:
    """Refuse a strategy and a mode named together: which of them should run is the caller's to say.

    Raises:
        ModeInvalid: both ``reasoning`` and ``mode`` are given.
    """
    if mode is not None and reasoning is not None:
        raise ModeInvalid(f"give a strategy or a mode, not both (strategy {reasoning!r}, mode {mode!r})")
