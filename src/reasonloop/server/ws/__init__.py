"""The WebSocket ``/v1/ws``: the session that serves each socket (:mod:`.session`) and the contract
it shares with the transport (:mod:`.frames`), which imports only that.

``reasonloop.server.ws`` was the session's module until the session moved to
:mod:`reasonloop.server.ws.session`; its names are still found here, with a DeprecationWarning,
for one release.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_SUBMODULES = frozenset({"frames", "session"})


def __getattr__(name: str) -> Any:
    """A name of the session's former module (``router``, ``serve_socket``...), with a warning."""
    if name.startswith("__") or name in _SUBMODULES:  # a submodule not yet imported: the import system's to find
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    session = importlib.import_module(f"{__name__}.session")
    try:
        value = getattr(session, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    warnings.warn(
        f"{__name__}.{name} moved to {__name__}.session.{name}; the old path is kept for one release",
        DeprecationWarning,
        stacklevel=2,
    )
    return value
