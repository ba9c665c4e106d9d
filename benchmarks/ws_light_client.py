"""A lean WebSocket client for load generation: what ``ws_load.py`` runs a thousand of on one core.

A load generator that is itself near its core's capacity measures its own queueing: with the
``websockets`` asyncio client, 1,000 clients reading 30,000 frames a second kept their core
80 to 99% busy, and every frame waited behind the others in the generator before it was
timestamped. This client does only what the benchmark needs, in the transport's callback: the
opening handshake (RFC 6455 §4.1, the server's ``Sec-WebSocket-Accept`` checked), reading
unfragmented, unmasked frames from the server, answering its pings and its close, and sending
masked text frames. Anything else (a fragmented or compressed frame, a bad handshake) fails the
connection with a message rather than being half-handled; ``ws_load.py --client websockets``
runs the ``websockets`` client instead (and does whenever permessage-deflate is asked for).

Usage::

    client = await connect_light("ws://127.0.0.1:8000/v1/ws", on_text)
    client.send_text('{"type":"ping"}')
    await client.closed
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import time
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["LightClient", "ProtocolFailure", "connect_light", "masked_frame"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_TEXT, _CLOSE, _PING, _PONG = 0x1, 0x8, 0x9, 0xA


class ProtocolFailure(Exception):
    """The server sent something this client does not handle (or a bad handshake)."""


def masked_frame(opcode: int, payload: bytes, mask: bytes) -> bytes:
    """One final client frame carrying ``payload`` masked with the four bytes ``mask`` (RFC 6455 §5.3)."""
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 65536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
    if not size:
        return head + mask
    repeated = (mask * (size // 4 + 1))[:size]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(size, "big")
    return head + mask + body


class LightClient(asyncio.Protocol):
    """One connection. ``on_text(text, received_wall, received_mono)`` is called for each text
    message, with the times its bytes were read; ``opened`` resolves after the handshake and
    ``closed`` when the connection ends (with :class:`ProtocolFailure` if the server broke the
    protocol)."""

    def __init__(self, host: str, path: str, on_text: Callable[[str, float, float], None]) -> None:
        loop = asyncio.get_running_loop()
        self.host, self.path, self.on_text = host, path, on_text
        self.opened: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.handshaken = False
        self.closing = False
        self.key = base64.b64encode(os.urandom(16))

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio's classes
        transport.write(
            b"GET " + self.path.encode() + b" HTTP/1.1\r\nHost: " + self.host.encode() + b"\r\n"
            b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + self.key + b"\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )

    def data_received(self, data: bytes) -> None:
        wall, mono = time.time(), time.perf_counter()  # when the bytes were read, for every frame in them
        self.buffer += data
        try:
            if not self.handshaken and not self._handshake():
                return
            self._frames(wall, mono)
        except ProtocolFailure as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(ProtocolFailure(f"connection lost during the handshake: {exc}"))
        if not self.closed.done():
            self.closed.set_result(None)

    # -- sending ------------------------------------------------------------------------------------
    def send_text(self, text: str) -> None:
        if self.transport is not None and not self.closing and not self.transport.is_closing():
            self.transport.write(masked_frame(_TEXT, text.encode(), os.urandom(4)))

    def close(self, code: int = 1000) -> None:
        """Start the closing handshake (the connection ends when the server answers it)."""
        if self.transport is None or self.closing:
            return
        self.closing = True
        self.transport.write(masked_frame(_CLOSE, code.to_bytes(2, "big"), os.urandom(4)))

    # -- reading ------------------------------------------------------------------------------------
    def _handshake(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > 16384:
                raise ProtocolFailure("handshake response too long")
            return False
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        del self.buffer[: end + 4]
        if not head[0].startswith("HTTP/1.1 101"):
            raise ProtocolFailure(f"handshake refused: {head[0]}")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
        expected = base64.b64encode(hashlib.sha1(self.key + _GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != expected:
            raise ProtocolFailure("handshake: wrong Sec-WebSocket-Accept")
        if headers.get("sec-websocket-extensions"):
            raise ProtocolFailure(f"handshake: extension negotiated ({headers['sec-websocket-extensions']})")
        self.handshaken = True
        self.opened.set_result(None)
        return True

    def _frames(self, wall: float, mono: float) -> None:
        buffer = self.buffer
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            if second & 0x80:
                raise ProtocolFailure("a frame from the server is masked")
            if not first & 0x80 or first & 0x70:
                raise ProtocolFailure("fragmented or compressed frame")
            size, start = second & 0x7F, 2
            if size == 126:
                if len(buffer) < 4:
                    return
                size, start = int.from_bytes(buffer[2:4], "big"), 4
            elif size == 127:
                if len(buffer) < 10:
                    return
                size, start = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < start + size:
                return
            payload = bytes(buffer[start : start + size])
            del buffer[: start + size]
            opcode = first & 0x0F
            if opcode == _TEXT:
                self.on_text(payload.decode(), wall, mono)
            elif opcode == _PING:
                if self.transport is not None and not self.closing:
                    self.transport.write(masked_frame(_PONG, payload, os.urandom(4)))
            elif opcode == _CLOSE:
                if not self.closing and self.transport is not None:
                    self.closing = True
                    self.transport.write(masked_frame(_CLOSE, payload[:2], os.urandom(4)))
                if self.transport is not None:
                    self.transport.close()
                return
            elif opcode != _PONG:
                raise ProtocolFailure(f"unexpected opcode {opcode}")

    def _fail(self, exc: ProtocolFailure) -> None:
        if not self.opened.done():  # reported by the handshake's wait; closed then just ends
            self.opened.set_exception(exc)
            if not self.closed.done():
                self.closed.set_result(None)
        elif not self.closed.done():
            self.closed.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()


async def connect_light(url: str, on_text: Callable[[str, float, float], None], timeout_s: float = 60) -> LightClient:
    """Open ``url`` (``ws://host:port/path``) and finish the handshake.

    Raises:
        ProtocolFailure: the server refused or botched the handshake.
        OSError: the connection failed.
    """
    parts = urlsplit(url)
    if parts.scheme != "ws" or parts.hostname is None:
        raise ValueError(f"only ws://host:port/path URLs: {url!r}")
    host = parts.netloc
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: LightClient(host, path, on_text), parts.hostname, parts.port or 80)
    await asyncio.wait_for(asyncio.shield(client.opened), timeout_s)
    return client
