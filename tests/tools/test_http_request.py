import shutil
import ssl
import subprocess
import time

import httpx
import pytest

from reasonloop.config import HTTPToolSettings
from reasonloop.tools.base import ToolContext
from reasonloop.tools.http_request import HttpRequestTool
from tests.tools.http_fixtures import LocalHTTPServer, Reply


def make(allow=("127.0.0.1",), resolver=None, transport=None, **kw):
    settings = HTTPToolSettings(enabled=True, allow_hosts=list(allow), **kw)
    return HttpRequestTool(settings, resolver=resolver, transport=transport)


def table_resolver(table, calls):
    async def resolve(host, port):
        calls.append(host)
        answers = table[host]
        return answers.pop(0) if isinstance(answers[0], list) else answers

    return resolve


def echo(seen):
    return Reply(200, {"method": seen.method, "path": seen.path, "host": seen.headers.get("host")})


async def call(tool, **args):
    return await tool.invoke(args, ToolContext())


async def test_get_from_an_allowlisted_fixture():
    with LocalHTTPServer(echo) as srv:
        out = await call(make(), method="GET", url=srv.url + "/hello?x=1")
    assert out.ok, out.error
    assert out.data["status"] == 200
    assert '"path": "/hello"' in out.text and "HTTP 200" in out.text
    assert srv.seen[0].query == {"x": ["1"]}


async def test_loopback_is_refused_without_allowlist_and_nothing_is_sent():
    with LocalHTTPServer(echo) as srv:
        out = await call(make(allow=()), method="GET", url=srv.url)
        out_name = await call(make(allow=()), method="GET", url=f"http://localhost:{srv.port}/")
    assert out.error["code"] == "tool.blocked" and "loopback" in out.error["error"]
    assert out_name.error["code"] == "tool.blocked"
    assert srv.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://2130706433/",
        "http://10.0.0.1/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
    ],
)
async def test_private_and_metadata_urls_are_refused(url):
    out = await call(make(allow=()), method="GET", url=url)
    assert out.error["code"] == "tool.blocked", out


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/", "gopher://x/"])
async def test_only_http_schemes(url):
    out = await call(make(), method="GET", url=url)
    assert out.error["code"] == "tool.blocked"


async def test_connects_to_the_checked_address_with_the_name_as_host_header():
    calls = []
    with LocalHTTPServer(echo) as srv:
        tool = make(allow=("127.0.0.1/32",), resolver=table_resolver({"docs.test": ["127.0.0.1"]}, calls))
        out = await call(tool, method="GET", url=f"http://docs.test:{srv.port}/a", headers={"Host": "evil.test"})
    assert out.ok, out.error
    assert srv.seen[0].headers["host"] == f"docs.test:{srv.port}"
    assert calls == ["docs.test"]  # resolved once: no second lookup could rebind it


async def test_dns_rebinding_to_metadata_is_refused():
    calls = []
    answers = {"rebind.test": [["127.0.0.1"], ["169.254.169.254"]]}
    with LocalHTTPServer(echo) as srv:
        tool = make(allow=("127.0.0.1",), resolver=table_resolver(answers, calls))
        first = await call(tool, method="GET", url=f"http://rebind.test:{srv.port}/")
        second = await call(tool, method="GET", url=f"http://rebind.test:{srv.port}/")
    assert first.ok and second.error["code"] == "tool.blocked"
    assert "cloud metadata" in second.error["error"]
    assert len(srv.seen) == 1


async def test_https_keeps_the_name_for_sni_and_host_while_connecting_to_the_ip():
    sent = []

    def handler(request):
        sent.append(request)
        return httpx.Response(200, text="secure")

    calls = []
    tool = make(
        allow=(),
        resolver=table_resolver({"secure.test": ["93.184.216.34"]}, calls),
        transport=httpx.MockTransport(handler),
    )
    out = await call(tool, method="GET", url="https://secure.test/path")
    assert out.ok and "secure" in out.text
    assert sent[0].url.host == "93.184.216.34" and sent[0].url.scheme == "https"
    assert sent[0].headers["host"] == "secure.test"
    assert sent[0].extensions["sni_hostname"] == "secure.test"


def redirecting(target):
    def handler(seen):
        if seen.path == "/start":
            return Reply(302, "", {"Location": target})
        return echo(seen)

    return handler


@pytest.mark.parametrize(
    "target", ["http://169.254.169.254/latest/", "http://localhost:{port}/end", "http://[::1]:{port}/end"]
)
async def test_redirect_to_a_private_address_is_refused(target):
    # The fixture is allowlisted by name only; the redirect target is not.
    holder = {}
    resolver = table_resolver({"fixture.test": ["127.0.0.1"], "localhost": ["127.0.0.1"]}, [])
    with LocalHTTPServer(lambda seen: redirecting(target.format(port=holder["port"]))(seen)) as srv:
        holder["port"] = srv.port
        tool = make(allow=("fixture.test",), resolver=resolver)
        out = await call(tool, method="GET", url=f"http://fixture.test:{srv.port}/start")
    assert out.error["code"] == "tool.blocked"
    assert [s.path for s in srv.seen] == ["/start"]


async def test_redirects_are_followed_and_recorded():
    with LocalHTTPServer(redirecting("/end")) as srv:
        out = await call(make(), method="GET", url=srv.url + "/start")
    assert out.ok and out.data["url"].endswith("/end")
    assert out.data["redirects"] == [srv.url + "/start"]


async def test_too_many_redirects():
    with LocalHTTPServer(lambda seen: Reply(302, "", {"Location": "/again"})) as srv:
        out = await call(make(max_redirects=2), method="GET", url=srv.url + "/")
    assert out.error["code"] == "tool.blocked" and "redirects" in out.error["error"]
    assert len(srv.seen) == 3


async def test_post_then_303_becomes_get_without_body():
    def handler(seen):
        return Reply(303, "", {"Location": "/result"}) if seen.method == "POST" else echo(seen)

    with LocalHTTPServer(handler) as srv:
        out = await call(make(methods=["GET", "POST"]), method="POST", url=srv.url + "/form", body='{"a": 1}')
    assert out.ok
    assert [(s.method, s.body) for s in srv.seen] == [("POST", b'{"a": 1}'), ("GET", b"")]


async def test_methods_outside_the_configuration_are_invalid():
    tool = make()
    out = await call(tool, method="DELETE", url="http://127.0.0.1/")
    assert out.error["code"] == "tool.invalid_arguments"
    assert tool.spec().parameters["properties"]["method"]["enum"] == ["GET", "HEAD"]


async def test_large_bodies_are_cut_at_max_bytes():
    with LocalHTTPServer(lambda seen: Reply(200, "x" * 50_000)) as srv:
        out = await call(make(max_bytes=1000), method="GET", url=srv.url)
    assert out.ok and out.data["truncated"] is True
    assert len(out.data["body"]) == 1000 and "body cut" in out.text


async def test_slow_server_times_out():
    def slow(seen):
        time.sleep(1.5)
        return Reply(200, "late")

    with LocalHTTPServer(slow) as srv:
        out = await call(make(timeout_s=0.3), method="GET", url=srv.url)
    assert out.error["code"] == "tool.timeout"


async def test_secret_headers_go_to_their_host_only_and_model_credentials_stop_at_host_change(monkeypatch):
    monkeypatch.setenv("RL_TEST_API_KEY", "s3cret-value")
    holder = {}

    def handler(seen):
        if seen.path == "/start":
            return Reply(302, "", {"Location": f"http://localhost:{holder['port']}/other"})
        return Reply(200, "done")

    with LocalHTTPServer(handler) as srv:
        holder["port"] = srv.port
        tool = make(allow=("127.0.0.1", "localhost"), host_secrets={"127.0.0.1": {"X-Api-Key": "RL_TEST_API_KEY"}})
        out = await call(tool, method="GET", url=srv.url + "/start", headers={"Authorization": "Bearer model"})
    assert out.ok
    first, second = srv.seen
    assert first.headers["x-api-key"] == "s3cret-value" and first.headers["authorization"] == "Bearer model"
    assert "x-api-key" not in second.headers and "authorization" not in second.headers
    assert "s3cret" not in out.text and "RL_TEST_API_KEY" not in str(tool.spec())


async def test_refused_connection_is_a_network_error():
    with LocalHTTPServer(echo) as srv:
        port = srv.port
    out = await call(make(), method="GET", url=f"http://127.0.0.1:{port}/")
    assert out.error["code"] == "tool.network"


async def test_binary_bodies_are_described_not_dumped():
    with LocalHTTPServer(lambda seen: Reply(200, b"\x89PNG\x00\x01", {"Content-Type": "image/png"})) as srv:
        out = await call(make(), method="GET", url=srv.url)
    assert "[binary body: 6 bytes of image/png]" in out.text


async def test_non_2xx_status_is_an_observation_not_an_error():
    with LocalHTTPServer(lambda seen: Reply(404, "missing")) as srv:
        out = await call(make(), method="GET", url=srv.url)
    assert out.ok and out.data["status"] == 404 and "HTTP 404" in out.text


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for the name ``secure.test`` (made with the openssl CLI)."""
    if shutil.which("openssl") is None:
        pytest.fail(
            "the openssl CLI is needed to make the test certificate (.ci/run installs it: apt-get install openssl)"
        )
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=secure.test",
            "-addext",
            "subjectAltName=DNS:secure.test",
        ],
        check=True,
        capture_output=True,
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return server, client


async def test_real_tls_is_verified_against_the_name_while_connecting_to_the_checked_ip(certificate):
    server_tls, client_tls = certificate
    table = {"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}
    with LocalHTTPServer(echo, tls=server_tls) as srv:
        tool = HttpRequestTool(
            HTTPToolSettings(allow_hosts=["127.0.0.1"]), resolver=table_resolver(table, []), verify=client_tls
        )
        good = await call(tool, method="GET", url=f"https://secure.test:{srv.port}/tls")
        wrong_name = await call(tool, method="GET", url=f"https://other.test:{srv.port}/tls")
        by_ip = await call(tool, method="GET", url=f"https://127.0.0.1:{srv.port}/tls")
    assert good.ok, good.error
    assert good.data["body"].count("secure.test") == 1  # the Host header the server saw
    assert wrong_name.error["code"] == "tool.network" and "CERTIFICATE" in wrong_name.error["error"].upper()
    assert by_ip.error["code"] == "tool.network"
    assert [s.path for s in srv.seen] == ["/tls"]


async def test_secret_host_names_match_case_insensitively(monkeypatch):
    monkeypatch.setenv("RL_TEST_API_KEY", "v")
    with LocalHTTPServer(echo) as srv:
        tool = make(
            allow=("docs.test",),
            resolver=table_resolver({"docs.test": ["127.0.0.1"]}, []),
            host_secrets={"Docs.Test": {"X-Api-Key": "RL_TEST_API_KEY"}},
        )
        out = await call(tool, method="GET", url=f"http://DOCS.test:{srv.port}/")
    assert out.ok and srv.seen[0].headers["x-api-key"] == "v"
