"""The published OpenAPI schema, as a test compares it: ``python -m tests.server.openapi_schema``
rewrites ``tests/server/data/openapi.json`` from the app (run it only when a change to the HTTP
API is meant, and review the difference)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from reasonloop.config import KBSettings, RunsSettings, Settings
from reasonloop.server import create_app

SNAPSHOT = Path(__file__).parent / "data" / "openapi.json"


def current_schema() -> dict[str, Any]:
    """The app's schema with default settings, its version left out (it changes with every release)."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(kb=KBSettings(path=f"{tmp}/kb"), runs=RunsSettings(sqlite_path=f"{tmp}/runs.sqlite"))
        schema = create_app(settings).openapi()
    schema["info"].pop("version", None)
    return schema


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SNAPSHOT.write_text(render(current_schema()), encoding="utf-8")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
