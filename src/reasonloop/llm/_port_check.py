"""Which loopback ports accept a connection, all checked at once with plain sockets.

Why: a port nobody listens on refuses a connection at once, so a machine serving no model costs
discovery a fraction of a millisecond and no event loop or HTTP client (benchmarks/README.md,
"discovery.py").
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections.abc import Iterable

__all__ = ["listening"]


def listening(host: str, ports: Iterable[int], timeout_s: float) -> set[int]:
    """The ``ports`` on ``host`` that accept a TCP connection within ``timeout_s`` (all tried at once)."""
    pending: dict[socket.socket, int] = {}
    accepted: set[int] = set()
    with selectors.DefaultSelector() as selector:
        try:
            for port in dict.fromkeys(ports):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setblocking(False)
                code = sock.connect_ex((host, port))
                if code == 0:
                    accepted.add(port)
                    sock.close()
                elif code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                    pending[sock] = port
                    selector.register(sock, selectors.EVENT_WRITE)
                else:
                    sock.close()
            deadline = time.monotonic() + timeout_s
            while pending and (left := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(left):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    selector.unregister(sock)
                    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        accepted.add(pending[sock])
                    del pending[sock]
                    sock.close()
        finally:
            for sock in pending:
                sock.close()
    return accepted
