"""The address guard: literal forms, address classes, the allow-list and the resolver step."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.errors import InputRejected
from affidavit.sources import AddressPolicy, address_problem, parse_ip_literal, vet_host
from affidavit.sources.netguard import canonical_address

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0X7F000001", "0177.0.0.1",
                                  "0177.0000.0.01", "127.1", "127.0.1", "0x7f.1", "0x7f.0.0.0x1",
                                  "127.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1"])
def test_every_spelling_of_loopback_is_read_as_loopback(host):
    address = parse_ip_literal(host)
    assert address is not None and canonical_address(address) == LOOPBACK
    assert address_problem(address) == "loopback"


@pytest.mark.parametrize("host", ["example.org", "localhost", "256.1.1.1", "1.2.3.4.5", "08.1.2.3",
                                  "0x", "1..2", "", "[::g]", "0x1ffffffff", "1.2.3.256",
                                  "1" * 40])
def test_names_and_impossible_numbers_are_not_literals(host):
    assert parse_ip_literal(host) is None


def dotted_forms() -> st.SearchStrategy[tuple[str, int]]:
    """An IPv4 address in a random ``inet_aton`` spelling, with the number it denotes."""

    def spell(number: int, parts: int, bases: list[int]) -> str:
        widths = [1] * (parts - 1) + [5 - parts]
        values, remaining = [], number
        for width in reversed(widths):
            values.append(remaining % 256**width)
            remaining //= 256**width
        values.reverse()
        pieces = []
        for value, base in zip(values, bases, strict=False):
            pieces.append({8: f"0{value:o}", 10: str(value), 16: f"0x{value:x}"}[base])
        return ".".join(pieces)

    return st.builds(
        lambda number, parts, bases: (spell(number, parts, bases), number),
        st.integers(0, 2**32 - 1), st.integers(1, 4),
        st.lists(st.sampled_from([8, 10, 16]), min_size=4, max_size=4))


@given(dotted_forms())
def test_literal_reading_matches_the_c_resolver(form):
    text, number = form
    assert parse_ip_literal(text) == ipaddress.IPv4Address(number)
    assert socket.inet_aton(text) == ipaddress.IPv4Address(number).packed


@given(st.integers(0, 2**32 - 1))
def test_wrapped_ipv4_is_judged_like_the_address_it_reaches(number):
    plain = ipaddress.IPv4Address(number)
    for wrapped in (f"::ffff:{plain}", f"64:ff9b::{plain}"):
        assert address_problem(ipaddress.IPv6Address(wrapped)) == address_problem(plain)
    if number > 1:
        assert address_problem(ipaddress.IPv6Address(f"::{plain}")) == address_problem(plain)


@pytest.mark.parametrize(("address", "problem"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("::127.0.0.1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("fd12::1", "private"), ("64:ff9b::a00:1", "private"),
    ("169.254.169.254", "a cloud metadata address"), ("fd00:ec2::254", "a cloud metadata address"),
    ("::ffff:169.254.169.254", "a cloud metadata address"),
    ("169.254.1.1", "link-local"), ("fe80::1", "link-local"),
    ("0.0.0.0", "the unspecified address"), ("::", "the unspecified address"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("fec0::1", "site-local"),
    ("100.64.0.1", "not globally routable"),
    ("2002:a00:1::1", "a tunnel to 10.0.0.1, which is private"),
    ("8.8.8.8", None), ("2606:4700::1111", None), ("::ffff:8.8.8.8", None),
    ("2002:808:808::1", None),
])
def test_address_classes(address, problem):
    assert address_problem(ipaddress.ip_address(address)) == problem


def test_the_allow_list_admits_networks_and_names():
    policy = AddressPolicy.from_entries(["10.0.0.0/8", "Intranet.Example.", "127.0.0.1"])
    assert policy.admits(ipaddress.ip_address("10.9.9.9"))
    assert policy.admits(ipaddress.ip_address("::ffff:10.9.9.9"))  # same host, other spelling
    assert policy.admits(LOOPBACK)
    assert not policy.admits(ipaddress.ip_address("127.0.0.2"))
    assert not policy.admits(ipaddress.ip_address("192.168.0.1"))
    assert policy.admits(ipaddress.ip_address("192.168.0.1"), host_name="intranet.example")
    assert policy.admits(ipaddress.ip_address("8.8.8.8"))  # public needs no allowance


def test_metadata_needs_an_entry_naming_exactly_that_address():
    metadata = ipaddress.ip_address("169.254.169.254")
    broad = AddressPolicy.from_entries(["169.254.0.0/16", "0.0.0.0/0", "cloud.test"])
    assert not broad.admits(metadata, host_name="cloud.test")
    assert AddressPolicy.from_entries(["169.254.169.254/32"]).admits(metadata)


def resolver(answers: dict[str, list[str]]):
    return lambda host, port: answers[host]


def test_vet_host_checks_every_resolved_address():
    policy = AddressPolicy()
    answers = {"public.test": ["93.184.215.14", "2606:2800:21f::1"],
               "mixed.test": ["93.184.215.14", "10.0.0.1"],
               "rebound.test": ["::ffff:127.0.0.1"]}
    assert [str(a) for a in vet_host("Public.Test.", 443, policy, resolve=resolver(answers))] == [
        "93.184.215.14", "2606:2800:21f::1"]
    for host in ("mixed.test", "rebound.test"):
        with pytest.raises(InputRejected) as caught:
            vet_host(host, 443, policy, resolve=resolver(answers))
        assert caught.value.reason_code == "SSRF_REFUSED"


def test_vet_host_refuses_literals_without_resolving():
    def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError("a literal must not be resolved")

    for host in ("2130706433", "[::ffff:10.0.0.1]", "0.0.0.0", "169.254.169.254"):
        with pytest.raises(InputRejected):
            vet_host(host, 443, AddressPolicy(), resolve=no_dns)
    assert vet_host("1.1.1.1", 443, AddressPolicy(), resolve=no_dns) == (
        ipaddress.IPv4Address("1.1.1.1"),)


def test_a_name_without_addresses_is_a_transient_failure():
    with pytest.raises(OSError, match="no address"):
        vet_host("void.test", 443, AddressPolicy(), resolve=resolver({"void.test": []}))


def test_allow_listed_names_reach_their_private_addresses():
    policy = AddressPolicy.from_entries(["files.corp"])
    answers = {"files.corp": ["10.1.1.1"], "other.corp": ["10.1.1.1"]}
    assert vet_host("files.corp", 443, policy, resolve=resolver(answers)) == (
        ipaddress.IPv4Address("10.1.1.1"),)
    with pytest.raises(InputRejected):
        vet_host("other.corp", 443, policy, resolve=resolver(answers))
    with pytest.raises(InputRejected):  # the name's allowance does not cover its number
        vet_host("10.1.1.1", 443, policy, resolve=resolver(answers))
