"""Which environment variables a test clears to start from a user's defaults."""

from __future__ import annotations

DISCOVERY_OFF = "REASONLOOP_LLM__DISCOVER"
"""Set to ``false`` by tests/conftest.py and kept by every test that clears the others."""


def is_outside_setting(name: str) -> bool:
    """A ``REASONLOOP_*`` variable from outside the test run (the discovery switch is the run's own)."""
    return name.startswith("REASONLOOP_") and name != DISCOVERY_OFF
