"""The app's own HTTP middleware.

:class:`SiteGuard` is the HTTP face of the gate's first step (:meth:`Gate.check_site
<reasonloop.server.gate.Gate.check_site>`): every request, routes that need no key included (the
web UI, the docs, health), before anything reads its body.
"""

from __future__ import annotations

from typing import Any

from reasonloop.errors import CrossSiteRefused
from reasonloop.server.errors import error_response
from reasonloop.server.gate import Gate

__all__ = ["SiteGuard"]


class SiteGuard:
    """ASGI middleware refusing HTTP requests of another site while no API keys are configured.

    Args:
        gate: The app's gate.
    """

    def __init__(self, app: Any, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            try:
                self.gate.check_site(scope)
            except CrossSiteRefused as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)
