"""Modules that moved rooms keep importing under their old dotted path for one release."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from reasonloop import _moved


@pytest.fixture
def moved_entry(monkeypatch: pytest.MonkeyPatch) -> str:
    old = "reasonloop.kb.an_old_place_for_filters"
    monkeypatch.setitem(_moved.MOVED, old, "reasonloop.kb.filters")
    yield old
    sys.modules.pop(old, None)


def test_an_old_path_imports_the_new_module_with_a_warning(moved_entry: str) -> None:
    new = importlib.import_module("reasonloop.kb.filters")
    with pytest.warns(DeprecationWarning, match="moved to reasonloop.kb.filters"):
        old = importlib.import_module(moved_entry)
    assert old is new
    # The new module keeps its own identity: the alias does not rename it.
    assert new.__name__ == "reasonloop.kb.filters"
    assert new.__spec__.name == "reasonloop.kb.filters"


def test_from_import_of_a_name_through_the_old_path(moved_entry: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(moved_entry)
    assert module.__dict__ is importlib.import_module("reasonloop.kb.filters").__dict__


def test_every_listed_old_path_still_imports() -> None:
    for old, new in _moved.MOVED.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert importlib.import_module(old) is importlib.import_module(new), old


def test_an_unknown_path_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("reasonloop.kb.no_such_module_anywhere")


def test_the_websocket_sessions_names_are_still_found_where_its_module_was() -> None:
    # reasonloop.server.ws was the session's module; it is now the package of the session and the frames.
    session = importlib.import_module("reasonloop.server.ws.session")
    with pytest.warns(DeprecationWarning, match=r"reasonloop\.server\.ws\.session\.serve_socket"):
        from reasonloop.server.ws import serve_socket
    assert serve_socket is session.serve_socket
    with pytest.raises(ImportError):
        from reasonloop.server.ws import no_such_name  # noqa: F401
