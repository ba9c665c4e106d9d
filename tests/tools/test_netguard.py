import pytest

from reasonloop.errors import ToolBlocked, ToolNetworkError
from reasonloop.tools.netguard import HostPolicy, blocked_reason

BLOCKED = {
    "127.0.0.1": "loopback",
    "127.8.9.10": "loopback",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "192.168.1.1": "private",
    "169.254.1.1": "link-local",
    "169.254.169.254": "cloud metadata",
    "100.100.100.200": "cloud metadata",
    "100.64.0.1": "not globally routable",
    "0.0.0.0": "unspecified",
    "224.0.0.1": "multicast",
    "239.255.255.250": "multicast",
    "240.0.0.1": "reserved",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fe80::1%eth0": "link-local",
    "fc00::1": "private",
    "fd00:ec2::254": "cloud metadata",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "loopback",
    "::ffff:169.254.169.254": "cloud metadata",
    "::ffff:10.0.0.1": "private",
    "2002:7f00:1::": "loopback",  # 6to4 wrapping 127.0.0.1
    "64:ff9b::a9fe:a9fe": "cloud metadata",  # NAT64 wrapping 169.254.169.254
    "::127.0.0.1": "loopback",  # IPv4-compatible form
}
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::"]


@pytest.mark.parametrize("address,reason", sorted(BLOCKED.items()))
def test_blocked_addresses_name_their_reason(address, reason):
    assert reason in (blocked_reason(address) or "")


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address):
    assert blocked_reason(address) is None


def test_garbage_is_not_an_address():
    assert blocked_reason("example.org") == "not an IP address"


def _resolver(table, calls=None):
    async def resolve(host, port):
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError("no such host")
        return table[host]

    return resolve


async def test_policy_refuses_a_name_that_resolves_to_loopback():
    policy = HostPolicy(resolver=_resolver({"sneaky.test": ["127.0.0.1"]}))
    with pytest.raises(ToolBlocked) as err:
        await policy.resolve("sneaky.test", 80)
    assert err.value.code == "tool.blocked"
    assert "sneaky.test (127.0.0.1)" in err.value.message and "loopback" in err.value.message


async def test_policy_refuses_when_any_answer_is_private():
    policy = HostPolicy(resolver=_resolver({"mixed.test": ["8.8.8.8", "10.0.0.7"]}))
    with pytest.raises(ToolBlocked, match=r"10\.0\.0\.7"):
        await policy.resolve("mixed.test", 80)


async def test_policy_returns_the_checked_address_and_resolves_once():
    calls = []
    policy = HostPolicy(resolver=_resolver({"ok.test": ["8.8.4.4", "8.8.8.8"]}, calls))
    assert await policy.resolve("ok.test", 443) == "8.8.4.4"
    assert calls == ["ok.test"]


async def test_literal_addresses_are_not_resolved():
    calls = []
    policy = HostPolicy(resolver=_resolver({}, calls))
    with pytest.raises(ToolBlocked):
        await policy.resolve("[::ffff:127.0.0.1]", 80)
    assert await policy.resolve("8.8.8.8", 80) == "8.8.8.8"
    assert calls == []


@pytest.mark.parametrize("host", ["2130706433", "0x7f.0.0.1", "127.1", "localhost"])
async def test_system_resolver_catches_disguised_loopback(host):
    with pytest.raises(ToolBlocked, match="loopback"):
        await HostPolicy().resolve(host, 80)


async def test_allowlist_by_name_wildcard_ip_and_network():
    table = {"fixture.test": ["127.0.0.1"], "a.corp.test": ["10.0.0.1"], "corp.test": ["10.0.0.2"]}
    policy = HostPolicy(["fixture.test", "*.corp.test", "192.168.5.0/24", "::1"], resolver=_resolver(table))
    assert await policy.resolve("fixture.test", 80) == "127.0.0.1"
    assert await policy.resolve("A.Corp.Test", 80) == "10.0.0.1"
    with pytest.raises(ToolBlocked):  # the wildcard covers subdomains only
        await policy.resolve("corp.test", 80)
    assert await policy.resolve("192.168.5.9", 80) == "192.168.5.9"
    assert await policy.resolve("::1", 80) == "::1"
    with pytest.raises(ToolBlocked):
        await policy.resolve("192.168.6.1", 80)


async def test_unresolvable_name_is_a_network_error():
    with pytest.raises(ToolNetworkError) as err:
        await HostPolicy(resolver=_resolver({})).resolve("nowhere.test", 80)
    assert err.value.code == "tool.network"
