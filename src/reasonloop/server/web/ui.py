"""The web UI: static files from inside the package, served at ``/`` under a strict
Content-Security-Policy.

The page is a client of this server's public API only. Its scripts are files of the same
origin (no inline script, no ``eval``, nothing from another site), which is what the policy
allows and all it allows: a document or answer that smuggles markup past the renderer still
cannot run code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["CONTENT_SECURITY_POLICY", "UI_PATH", "install_webui", "webui_dir"]

UI_PATH = "/ui"
"""Where the page's scripts, styles and vendored libraries are served."""

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",  # blob: a page image, fetched with the API key and shown from memory
        "font-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated (ETag): a new version shows at the next load
}


def webui_dir() -> Path:
    """The folder of ``index.html``, ``app.js`` and the rest."""
    return Path(__file__).parent / "static"


class _UIFiles(StaticFiles):
    def file_response(self, *args: Any, **kwargs: Any) -> Any:
        response = super().file_response(*args, **kwargs)
        response.headers.update(_HEADERS)
        return response


def install_webui(app: FastAPI) -> None:
    """Serve the page at ``/`` and its assets under :data:`UI_PATH`."""
    folder = webui_dir()
    app.mount(UI_PATH, _UIFiles(directory=folder), name="webui")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(folder / "index.html", media_type="text/html; charset=utf-8", headers=_HEADERS)
