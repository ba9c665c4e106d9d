"""One headless Chromium per test module (Debian's, through playwright)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import sync_playwright

from tests.webui.harness import launch_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_playwright() as p:
        b = launch_browser(p)
        yield b
        b.close()
