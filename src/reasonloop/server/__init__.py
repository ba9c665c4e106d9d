"""The HTTP/WebSocket server: REST, SSE, WebSocket and OpenAI-compatible endpoints over the run manager."""

from reasonloop.server.app import create_app

__all__ = ["create_app"]
