"""Address checks for tools that reach the network on a model's behalf.

A model can be talked into fetching ``http://169.254.169.254/`` (cloud credentials) or an
admin page on ``localhost``. :func:`blocked_reason` says why an IP address must not be
reached: loopback, private, link-local, multicast, reserved, unspecified, shared (CGNAT),
documentation ranges and the cloud metadata addresses — IPv4 and IPv6, including IPv4
addresses carried inside IPv6 (``::ffff:127.0.0.1``, 6to4, NAT64, Teredo).

:class:`HostPolicy` resolves a host name once, checks every address it resolves to, and
hands back the address to connect to, so a second, different DNS answer (DNS rebinding)
cannot slip through. The operator's allowlist (host names, ``*.suffix`` wildcards, IPs,
CIDR networks) makes exceptions.

Example::

    policy = HostPolicy(allow_hosts=["*.internal.example"])
    ip = await policy.resolve("api.example.org", 443)   # raises ToolBlocked for private answers
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

from reasonloop.errors import ToolBlocked, ToolNetworkError

__all__ = ["HostPolicy", "Resolver", "blocked_reason", "system_resolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port) -> addresses`` as strings; the default asks the system resolver."""

# Metadata services of cloud providers. Most sit in ranges blocked anyway (link-local,
# ULA, CGNAT); they are named so the refusal says what was at stake.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"): "AWS/GCP/Azure/OpenStack",
    ipaddress.ip_address("169.254.170.2"): "AWS ECS",
    ipaddress.ip_address("fd00:ec2::254"): "AWS (IPv6)",
    ipaddress.ip_address("100.100.100.200"): "Alibaba Cloud",
    ipaddress.ip_address("192.0.0.192"): "Oracle Cloud",
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, if it carries one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def blocked_reason(address: str | IPAddress) -> str | None:
    """Why ``address`` must not be reached, or ``None`` when it is a public unicast address.

    Args:
        address: An IPv4 or IPv6 address (text or ``ipaddress`` object; a ``%zone`` suffix is ignored).

    Returns:
        A short reason such as ``"loopback"`` or ``"cloud metadata (AWS/GCP/Azure/OpenStack)"``.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    except ValueError:
        return "not an IP address"
    if ip in _METADATA:
        return f"cloud metadata ({_METADATA[ip]})"
    if isinstance(ip, ipaddress.IPv6Address) and not (ip.is_loopback or ip.is_unspecified):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            reason = blocked_reason(inner)
            return f"{reason} (IPv4 {inner} inside IPv6)" if reason else None
        if ip in _NAT64_LOCAL:
            return "local-use NAT64"
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
    )
    for reason, hit in checks:
        if hit:
            return reason
    if not ip.is_global:
        return "not globally routable"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """All addresses the system resolver gives for ``host`` (IPv4 and IPv6, in its order)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class HostPolicy:
    """Decides which hosts may be reached and pins each to one checked address.

    Args:
        allow_hosts: Exceptions to the block: exact host names, ``*.suffix`` wildcards
            (matching subdomains only), IP addresses or CIDR networks.
        resolver: ``(host, port) -> addresses``; defaults to the system resolver.
    """

    def __init__(self, allow_hosts: Sequence[str] = (), resolver: Resolver | None = None) -> None:
        self._names: set[str] = set()
        self._suffixes: list[str] = []
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allow_hosts:
            entry = entry.strip().lower().rstrip(".")
            if not entry:
                continue
            if entry.startswith("*."):
                self._suffixes.append(entry[1:])
                continue
            try:
                self._networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self._names.add(entry)
        self._resolver = resolver or system_resolver

    def host_allowed(self, host: str) -> bool:
        """True when ``host`` is allowlisted by name or wildcard."""
        name = host.lower().rstrip(".")
        return name in self._names or any(name.endswith(suffix) for suffix in self._suffixes)

    def address_allowed(self, address: str) -> bool:
        """True when ``address`` lies in an allowlisted IP or network."""
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        return any(ip.version == net.version and ip in net for net in self._networks)

    async def resolve(self, host: str, port: int) -> str:
        """Resolve ``host`` once and return the address to connect to.

        Every address of the answer is checked (a name that resolves to one public and one
        private address is refused), unless the host is allowlisted by name.

        Raises:
            ToolBlocked: an address is refused; the message names host, address and reason.
            ToolNetworkError: the name does not resolve.
        """
        host = host.strip("[]").lower()
        try:
            literal: IPAddress | None = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [host]
        else:
            try:
                addresses = await self._resolver(host, port)
            except OSError as exc:
                raise ToolNetworkError(f"cannot resolve host {host!r}: {exc}", host=host) from exc
            if not addresses:
                raise ToolNetworkError(f"host {host!r} has no addresses", host=host)
        if literal is None and self.host_allowed(host):
            return addresses[0]
        for address in addresses:
            reason = blocked_reason(address)
            if reason and not self.address_allowed(address):
                shown = host if literal is not None else f"{host} ({address})"
                raise ToolBlocked(
                    f"refused to reach {shown}: {reason} address; ask the operator to allowlist the host",
                    host=host,
                    address=address,
                    reason=reason,
                )
        return addresses[0]
