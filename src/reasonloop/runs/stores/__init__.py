"""Run stores: the contract (:mod:`~reasonloop.runs.stores.protocol`), SQLite (default) and Redis.

Third-party stores register under the ``reasonloop.run_store`` entry-point group and are
constructed with the ``[runs]`` settings: :func:`open_store` picks one by ``[runs] store``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasonloop.config import Settings
from reasonloop.runs.stores.protocol import RunStore, StoreFeatures

__all__ = ["RunStore", "StoreFeatures", "open_store"]


def open_store(settings: Settings, registry: Any = None) -> RunStore:
    """The run store named by ``[runs] store``, constructed (not yet opened).

    Looks the id up in the ``run_store`` registry (the built-in ids resolve everywhere).
    """
    from reasonloop.registry import resolve

    factory: Callable[..., RunStore] = resolve("run_store", settings.runs.store, registry)
    return factory(settings.runs, kb_path=settings.kb.path)
