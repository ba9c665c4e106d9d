"""The HTTP API's published schema changes only on purpose (``tests/server/openapi_schema.py`` rewrites it)."""

from __future__ import annotations

import json

from tests.server.openapi_schema import SNAPSHOT, current_schema, render


def test_the_openapi_schema_is_the_published_one():
    published = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    current = current_schema()
    changed = sorted(
        path
        for path in published["paths"].keys() | current["paths"].keys()
        if published["paths"].get(path) != current["paths"].get(path)
    )
    assert not changed, f"paths whose schema changed: {changed}"
    assert render(current) == render(published)
