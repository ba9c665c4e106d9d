"""How ``reasonloop serve`` runs uvicorn: it says where the server is once it listens, and that it
stopped when it has.

uvicorn's own "running on" line is an info log, hidden at the default ``log_level`` (warning),
and it names the address bound (``0.0.0.0``), not one to open.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

__all__ = ["listening_url", "run_server"]

Listening = Callable[[str], None]


def listening_url(host: str, port: int, scheme: str = "http") -> str:
    """A URL to open for a server bound to ``host``: a wildcard address becomes ``localhost``."""
    if host in ("", "0.0.0.0", "::"):
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _port(sockets: Any) -> int:
    return int(sockets[0].getsockname()[1])


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_listening: Listening) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.on_listening(listening_url(self.config.host, _port(self.servers[0].sockets)))


def run_server(app: Any, *, workers: int, on_listening: Listening, **options: Any) -> bool:
    """Serve ``app`` (an app, or with ``workers > 1`` an import string) until stopped.

    Args:
        app: What uvicorn serves.
        workers: Processes; several share one socket the parent binds.
        on_listening: Called with the server's URL once it accepts connections.
        **options: ``uvicorn.Config`` options.

    Returns:
        Whether the server started (binding or start-up failed otherwise; uvicorn logged why).
    """
    config = uvicorn.Config(app, workers=workers, **options)
    if workers > 1:
        try:
            sock = config.bind_socket()
        except SystemExit:  # uvicorn logged the reason
            return False
        on_listening(listening_url(config.host, _port([sock])))
        with contextlib.suppress(KeyboardInterrupt):
            Multiprocess(config, sockets=[sock]).run()
        return True
    server = _Server(config, on_listening)
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled
        pass
    except SystemExit:  # start-up failed; uvicorn logged why
        return False
    return server.started
