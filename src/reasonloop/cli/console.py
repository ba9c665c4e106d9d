"""The consoles every command prints to: results on stdout, progress, notes and errors on stderr.

Kept apart from :mod:`reasonloop.cli.root` so that the root command (``--version``) starts
without rich. The consoles, and :func:`escape`, load rich when first used: ``--help`` lists every
command without rich, whose import is a third of the start-up over typer's
(benchmarks/README.md, "startup.py").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["console", "err_console", "escape", "rich_console"]


class _Deferred:
    """Stands for a rich ``Console`` made on first use (attributes set on it stay its own)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._made(), name)

    def _made(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console


console: Console = _Deferred()  # type: ignore[assignment]
err_console: Console = _Deferred(stderr=True)  # type: ignore[assignment]


def rich_console(console: Console) -> Console:
    """The rich ``Console`` itself, for what takes one as an argument (a progress bar)."""
    return console._made() if isinstance(console, _Deferred) else console


def escape(text: str) -> str:
    """``text`` with rich markup escaped, so that it prints as written."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)
