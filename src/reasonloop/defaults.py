"""Defaults every surface shares, in a module that imports nothing (the command line reads them
when it starts, before it loads any of the run machinery).

:data:`DEFAULT_REASONING` is the strategy of a run that names none: ``reasonloop ask`` and
``reasonloop chat``, ``Agent()``, ``POST /v1/runs`` and the WebSocket ``ask`` frame, the
OpenAI-compatible endpoint's ``reasonloop`` / ``default`` model, the MCP ``ask`` tool, and the
strategy the web UI selects until its user picks another.
"""

from __future__ import annotations

__all__ = ["DEFAULT_REASONING"]

DEFAULT_REASONING = "qa"
"""Retrieval QA: it answers from the documents in one step (a search, then one model call citing
what it found), works with every model, base models included, and says so when the documents do
not hold the answer. Tool-using strategies (``react``, ``toolcall``, ``rewoo``) are chosen by name."""
