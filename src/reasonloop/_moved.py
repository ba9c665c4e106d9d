"""Old dotted paths of modules that moved to another room keep importing, with a DeprecationWarning.

`MOVED` maps each old module path to its new one. Importing an old path imports the new module
once and makes the old name an alias of it (the same module object, so `isinstance` checks,
monkeypatching and pickled dotted paths written by an earlier release keep working). Entries
are removed one release after the move.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    # server/ by surface: routes/, ws/, mcp/, web/
    "reasonloop.server.catalog_routes": "reasonloop.server.routes.catalog",
    "reasonloop.server.conversation_routes": "reasonloop.server.routes.conversations",
    "reasonloop.server.docs_routes": "reasonloop.server.web.api_docs",
    "reasonloop.server.document_routes": "reasonloop.server.routes.documents",
    "reasonloop.server.kb_routes": "reasonloop.server.routes.kb",
    "reasonloop.server.mcp_http": "reasonloop.server.mcp.endpoint",
    "reasonloop.server.mcp_inputs": "reasonloop.server.mcp.inputs",
    "reasonloop.server.mcp_server": "reasonloop.server.mcp.server",
    "reasonloop.server.openai_routes": "reasonloop.server.routes.openai",
    "reasonloop.server.pages_routes": "reasonloop.server.routes.pages",
    "reasonloop.server.runs_routes": "reasonloop.server.routes.runs",
    "reasonloop.server.stopping": "reasonloop.server.routes.stopping",
    "reasonloop.server.webui": "reasonloop.server.web.ui",
    "reasonloop.server.ws_frames": "reasonloop.server.ws.frames",
}


class _AliasLoader:  # the loader protocol; importlib.abc is not imported to keep `import reasonloop` light
    def __init__(self, new: str) -> None:
        self._new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder; exec_module puts the moved module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self._new}; the old path is kept for one release",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system returns what sys.modules holds after this call: the new module itself,
        # with its own __spec__ and __name__ untouched.
        sys.modules[module.__name__] = importlib.import_module(self._new)


class _MovedFinder:
    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder after the standard ones, so a module still at its old path is found there first."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
