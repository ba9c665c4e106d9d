import httpx
import pytest

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.fetch import fetch_url, is_url

from .helpers import LoopbackServer, reply


def _big(handler):
    reply(handler, b"x" * 5000, "text/plain")


def _stream_big(handler):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.end_headers()  # no content-length: the cap must apply while streaming
    for _ in range(10):
        handler.wfile.write(b"y" * 1000)


def _slow(handler):
    import time

    time.sleep(1.0)
    reply(handler, b"late", "text/plain")


@pytest.fixture
def server():
    routes = {
        "/doc.html": lambda h: reply(h, b"<html><body><p>hi</p></body></html>", "text/html; charset=utf-8"),
        "/big": _big,
        "/stream": _stream_big,
        "/slow": _slow,
        "/gone": lambda h: reply(h, b"no", "text/plain", status=410),
    }
    with LoopbackServer(routes) as s:
        yield s


def test_is_url():
    assert is_url("https://x.org/a") and is_url("http://x") and not is_url("docs/a.md")


async def test_fetch_ok(server):
    body, ctype, suffix = await fetch_url(server.url + "/doc.html")
    assert body.startswith(b"<html>") and ctype.startswith("text/html") and suffix == ".html"


@pytest.mark.parametrize("path", ["/big", "/stream"])
async def test_size_cap(server, path):
    with pytest.raises(KBLoadError, match="limit"):
        await fetch_url(server.url + path, max_bytes=2000)


async def test_http_error_status(server):
    with pytest.raises(KBLoadError, match="HTTP 410") as info:
        await fetch_url(server.url + "/gone")
    assert info.value.details["status_code"] == 410


async def test_timeout(server):
    with pytest.raises(KBLoadError, match="timed out"):
        await fetch_url(server.url + "/slow", timeout_s=0.2)


async def test_connection_refused():
    with pytest.raises(KBLoadError, match="cannot fetch"):
        await fetch_url("http://127.0.0.1:9/x", timeout_s=2)


async def test_shared_client_is_not_closed(server):
    async with httpx.AsyncClient() as client:
        await fetch_url(server.url + "/doc.html", client=client)
        assert not client.is_closed
