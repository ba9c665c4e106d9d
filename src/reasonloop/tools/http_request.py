"""``http_request``: an HTTP client that is safe to hand to a model.

Each hop of a request is checked before anything is sent: the scheme must be http(s), the
method one the operator allows, and every address the host resolves to must be public
(:mod:`reasonloop.tools.netguard`) unless the operator allowlists the host. The connection
goes to the address that was checked — the URL is rewritten to the IP while the ``Host``
header and TLS server name (SNI, certificate check) keep the original name — so a second
DNS answer cannot redirect it (DNS rebinding). Redirects are followed by hand and each
hop is checked again. Bodies are cut at ``max_bytes``; the whole call is bounded by
``timeout_s``.

Secrets never pass through the model: ``host_secrets`` maps a host to headers whose values
are read from environment variables and added to requests to that host only.

Example config::

    [tools.http]
    enabled = true
    methods = ["GET", "POST"]
    host_secrets = { "api.github.com" = { Authorization = "GITHUB_AUTH_HEADER" } }
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from typing import Any, ClassVar, Literal
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import ConfigDict, Field, create_model

from reasonloop.config import HTTPToolSettings, secret
from reasonloop.errors import ToolArgumentsInvalid, ToolBlocked, ToolNetworkError, ToolTimeout
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput
from reasonloop.tools.netguard import HostPolicy, Resolver

__all__ = ["HttpRequestTool"]

_REDIRECTS = {301, 302, 303, 307, 308}
# Headers the tool sets itself; a model-supplied value would defeat the address pinning
# or the size limit.
_RESERVED_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
# Headers that must not follow a redirect to another host.
_CREDENTIAL_HEADERS = {"authorization", "cookie", "proxy-authorization"}
_TEXTUAL = ("text/", "json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "csv")


class HttpRequestTool(Tool):
    """Make an HTTP request to a public web address and read the response.

    Args:
        settings: ``[tools.http]``: allowlist, methods, limits, per-host secret headers.
        resolver: Name resolution for the address checks (tests inject one); defaults to
            the system resolver.
        transport: An httpx transport to send through (tests only); defaults to a fresh
            connection per hop, with proxies from the environment ignored.
        verify: TLS verification: ``True`` (system CAs), or an ``ssl.SSLContext`` trusting
            a private CA. Certificates are always checked against the host name, not the IP.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "http_request")
    name = "http_request"
    side_effects = True  # a request may change something on the server it reaches
    description = (
        "Make an HTTP request to a public URL and return the status, headers and body (text, cut when long). "
        "Private, local and cloud-metadata addresses are refused."
    )

    def __init__(
        self,
        settings: HTTPToolSettings | None = None,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.settings = settings or HTTPToolSettings(enabled=True)
        self.methods = [m.upper() for m in self.settings.methods] or ["GET"]
        self.policy = HostPolicy(self.settings.allow_hosts, resolver)
        self.timeout_s = self.settings.timeout_s + 1.0
        self._transport = transport
        self._verify = verify
        self._host_secrets = {h.lower().rstrip("."): v for h, v in self.settings.host_secrets.items()}
        self.Params = create_model(  # type: ignore[misc, call-overload]
            "http_request_params",
            __config__=ConfigDict(extra="forbid"),
            method=(Literal[tuple(self.methods)], Field(description="HTTP method.")),  # type: ignore[valid-type]
            url=(str, Field(description="Absolute http:// or https:// URL.")),
            headers=(dict[str, str] | None, Field(default=None, description="Extra request headers.")),
            body=(str | None, Field(default=None, description="Request body (text or JSON text).")),
        )

    async def run(self, params: Any, ctx: ToolContext) -> ToolOutput:
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                return await self._request(params.method.upper(), params.url, params.headers or {}, params.body)
        except TimeoutError:
            raise ToolTimeout(f"http_request: no complete response within {self.settings.timeout_s:g}s") from None

    async def _request(self, method: str, url: str, headers: dict[str, str], body: str | None) -> ToolOutput:
        if method not in self.methods:
            raise ToolBlocked(f"method {method} is not allowed (allowed: {', '.join(self.methods)})", method=method)
        model_headers = {k: v for k, v in headers.items() if k.lower() not in _RESERVED_HEADERS}
        first_host = _split(url)[1]
        hops: list[str] = []
        for _ in range(self.settings.max_redirects + 1):
            hops.append(url)
            _, host, port = _split(url)
            if host != first_host:  # never carry the model's credentials to another host
                model_headers = {k: v for k, v in model_headers.items() if k.lower() not in _CREDENTIAL_HEADERS}
            address = await self.policy.resolve(host, port)
            response, data, truncated = await self._send(method, url, host, address, model_headers, body)
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                url = urljoin(url, location)
                if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                    method, body = ("HEAD" if method == "HEAD" else "GET"), None
                continue
            return _output(response, data, truncated, url, hops)
        raise ToolBlocked(f"more than {self.settings.max_redirects} redirects", hops=hops)

    async def _send(
        self, method: str, url: str, host: str, address: str, headers: dict[str, str], body: str | None
    ) -> tuple[httpx.Response, bytes, bool]:
        parts = urlsplit(url)
        shown_ip = f"[{address}]" if ipaddress.ip_address(address.split("%", 1)[0]).version == 6 else address
        pinned = parts._replace(netloc=f"{shown_ip}:{parts.port}" if parts.port else shown_ip).geturl()
        send_headers = {**headers, **self._secrets(host), "Host": parts.netloc.rsplit("@", 1)[-1]}
        send_headers.setdefault("User-Agent", "reasonloop-http-tool")
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        limit = self.settings.max_bytes
        client = httpx.AsyncClient(
            transport=self._transport,
            trust_env=False,
            verify=self._verify,
            follow_redirects=False,
            timeout=self.settings.timeout_s,
        )
        try:
            request = client.build_request(
                method, pinned, headers=send_headers, content=body.encode() if body is not None else None
            )
            request.extensions.update(extensions)
            response = await client.send(request, stream=True)
            chunks: list[bytes] = []
            size = 0
            truncated = False
            try:
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        truncated = True
                        break
            finally:
                await response.aclose()
            return response, b"".join(chunks)[:limit], truncated
        except httpx.TimeoutException as exc:
            raise ToolTimeout(f"http_request: {host} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise ToolNetworkError(f"http_request to {host} failed: {type(exc).__name__}: {exc}", host=host) from exc
        finally:
            await client.aclose()

    def _secrets(self, host: str) -> dict[str, str]:
        headers = self._host_secrets.get(host.lower().rstrip("."), {})
        out = {}
        for header, env in headers.items():
            value = secret(env)
            if value:
                out[header] = value
        return out


def _split(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ToolArgumentsInvalid(f"not a valid URL: {url!r} ({exc})") from exc
    if parts.scheme not in ("http", "https"):
        raise ToolBlocked(f"only http and https URLs are allowed, not {parts.scheme or 'no scheme'!r}", url=url)
    if not parts.hostname:
        raise ToolArgumentsInvalid(f"URL has no host: {url!r}")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _output(response: httpx.Response, data: bytes, truncated: bool, url: str, hops: list[str]) -> ToolOutput:
    content_type = response.headers.get("content-type", "")
    textual = not content_type or any(marker in content_type.lower() for marker in _TEXTUAL)
    if textual:
        body = data.decode(response.charset_encoding or "utf-8", errors="replace")
    else:
        body = f"[binary body: {len(data)} bytes of {content_type}]"
    note = "\n[body cut: response larger than the size limit]" if truncated else ""
    shown = ("content-type", "content-length", "location", "last-modified", "date")
    head = "\n".join(f"{k}: {response.headers[k]}" for k in shown if k in response.headers)
    text = f"HTTP {response.status_code} {response.reason_phrase}\nURL: {url}\n{head}\n\n{body}{note}"
    return ToolOutput(
        text=text,
        data={
            "status": response.status_code,
            "url": url,
            "redirects": hops[:-1],
            "headers": dict(response.headers),
            "body": body,
            "truncated": truncated,
        },
    )
