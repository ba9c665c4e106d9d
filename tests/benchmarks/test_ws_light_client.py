"""The load generator's lean WebSocket client (benchmarks/ws_light_client.py): its frames, its
handshake against the real server, and what it refuses to half-handle."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json

import pytest
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from reasonloop.server import create_app
from tests.benchmarks.loading import load_benchmark
from tests.server.helpers import make_settings, serve

light = load_benchmark("ws_light_client")


@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536])
def test_a_masked_frame_parses_back_as_the_same_text(size):
    payload = bytes(i % 251 for i in range(size))
    reader = StreamReader()
    reader.feed_data(light.masked_frame(0x1, payload, b"\x01\x82\x33\xf4"))
    parser = Frame.parse(reader.read_exact, mask=True)
    with pytest.raises(StopIteration) as done:
        next(parser)
    frame = done.value.value
    assert frame.opcode is Opcode.TEXT and frame.fin and frame.data == payload


@pytest.mark.integration
async def test_it_talks_to_the_server_and_closes_cleanly(tmp_path):
    settings = make_settings(tmp_path)
    got: list[str] = []
    async with serve(create_app(settings), settings) as url:
        client = await light.connect_light(url.replace("http", "ws") + "/v1/ws", lambda t, w, m: got.append(t))
        client.send_text(json.dumps({"type": "ping", "id": 7}))
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.01)
        assert [json.loads(t) for t in got] == [{"type": "pong", "id": 7}]
        client.close()
        await asyncio.wait_for(client.closed, 5)


async def test_a_refused_handshake_and_a_fragmented_frame_fail_the_connection():
    handlers: set[asyncio.Task[None]] = set()

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await answer(reader, writer)
        finally:
            writer.close()  # also when the test ends first: no socket is left for the collector

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        if b"/refuse" in request:
            writer.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
        else:
            key = next(line.split(b": ")[1] for line in request.split(b"\r\n") if line.startswith(b"Sec-WebSocket-Key"))
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
            writer.write(b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n" + bytes((0x01, 3)) + b"abc")  # FIN unset
        await writer.drain()
        await asyncio.sleep(1)

    listener = await asyncio.start_server(server, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        with pytest.raises(light.ProtocolFailure, match="403"):
            await light.connect_light(f"ws://127.0.0.1:{port}/refuse", lambda t, w, m: None)
        client = await light.connect_light(f"ws://127.0.0.1:{port}/", lambda t, w, m: None)
        with pytest.raises(light.ProtocolFailure, match="fragmented"):
            await asyncio.wait_for(client.closed, 5)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
