"""Settings every test shares, and the two lanes (tests/lanes.py).

Looking for models served on this machine is off: a developer's own Ollama or LM Studio must not
change which model a test gets. Set here, at import, so CLI and server processes the tests start
inherit it too; the discovery tests turn it on with their own settings and ports.
"""

from __future__ import annotations

import os

import pytest

from tests.environment import DISCOVERY_OFF
from tests.lanes import assign_lanes, guard_unit_test  # noqa: F401  (the guard is an autouse fixture)

os.environ[DISCOVERY_OFF] = "false"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Called after the conftests below this one (tests/perf/ adds its marker) and before `-m` selects.
    assign_lanes(items)
