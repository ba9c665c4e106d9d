"""The consoles every command prints to: results on stdout, progress, notes and errors on stderr.

Kept apart from :mod:`reasonloop.cli.root` so that the root command (``--version``) starts
without rich."""

from __future__ import annotations

from rich.console import Console

__all__ = ["console", "err_console"]

console = Console()
err_console = Console(stderr=True)
