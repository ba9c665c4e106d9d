"""Every test here pins the implementation (see README.md): marked ``perf``."""

import pytest

from tests.runs.conftest import store  # noqa: F401  (the run store fixture, for the footprint test)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/perf/" in str(item.fspath):
            item.add_marker(pytest.mark.perf)
