"""Fixtures for strategy tests."""

from __future__ import annotations

import pytest

from tests.reasoning.helpers import FakeRetriever


@pytest.fixture
def retriever() -> FakeRetriever:
    return FakeRetriever()
