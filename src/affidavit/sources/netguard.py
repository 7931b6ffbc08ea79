"""The address guard for network transports: which hosts a fetch may connect to.

A URL in a manifest, a redirect ``Location`` or a DNS answer is untrusted: without a guard
a document source could make the ingester read cloud metadata, an admin port on loopback
or a service on the private network (server-side request forgery). The rule is simple:
only globally routable unicast addresses are reached, unless the operator allow-lists a
network or a host name in ``[https] allow_networks``.

Host names are checked after resolution, and every resolved address must pass (a DNS
answer mixing a public and a private address is refused). Literal hosts are read the way
the C resolver reads them, so ``2130706433``, ``0x7f000001``, ``0177.0.0.1`` and ``127.1``
are all loopback, and an IPv6 address that embeds an IPv4 one (``::ffff:127.0.0.1``,
``::127.0.0.1``, NAT64, 6to4) is judged by the IPv4 address it reaches.

Cloud metadata endpoints are refused even inside an allowed network: only an allow-list
entry naming exactly that address admits one.

Everything here is pure except :func:`system_resolver`; :func:`vet_host` takes the resolver
as an argument so that tests can answer for names without DNS.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from affidavit.errors import InputRejected

SSRF_REFUSED = "SSRF_REFUSED"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
# Longer parts cannot be an address and would only make int() slow.
_MAX_NUMBER_CHARS = 20


@dataclass(frozen=True)
class AddressPolicy:
    """Networks and host names the operator allows although they are not public."""

    networks: tuple[IPNetwork, ...] = ()
    host_names: frozenset[str] = frozenset()

    @classmethod
    def from_entries(cls, entries: Iterable[str]) -> AddressPolicy:
        """Read ``allow_networks`` entries: CIDR blocks or addresses, else host names."""
        networks: list[IPNetwork] = []
        names: set[str] = set()
        for entry in entries:
            text = entry.strip()
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                if text:
                    names.add(normalize_host_name(text))
        return cls(tuple(networks), frozenset(names))

    def admits(self, address: IPAddress, *, host_name: str | None = None) -> bool:
        """Whether a connection to ``address`` (reached through ``host_name``) is allowed."""
        target = canonical_address(address)
        if address_problem(target) is None:
            return True
        if target in METADATA_ADDRESSES:
            return any(net.num_addresses == 1 and target in net for net in self.networks)
        if host_name is not None and normalize_host_name(host_name) in self.host_names:
            return True
        return any(net.version == target.version and target in net for net in self.networks)


def normalize_host_name(name: str) -> str:
    """Case-folded, without the trailing dot of a fully qualified name."""
    return name.strip().lower().rstrip(".")


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a literal host denotes (any form the C resolver accepts), else None."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return _loose_ipv4(text)


def _loose_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """``inet_aton`` rules: 1 to 4 parts, each decimal, octal (``0``) or hex (``0x``);
    the last part fills the bytes the earlier ones leave."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_number(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = [value for value in values if value is not None]
    *leading, last = numbers
    if any(value > 255 for value in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    packed = last
    for position, value in enumerate(leading):
        packed += value << (8 * (3 - position))
    return ipaddress.IPv4Address(packed)


def _number(part: str) -> int | None:
    if not part or len(part) > _MAX_NUMBER_CHARS:
        return None
    lowered = part.lower()
    if lowered.startswith("0x"):
        digits, base = lowered[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def canonical_address(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one reaches when it merely wraps it (mapped, compatible,
    NAT64); any other address unchanged."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64:
        return embedded
    # ``::`` and ``::1`` live in the same /96 but are themselves, not wrapped IPv4.
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return embedded
    return address


def address_problem(address: IPAddress) -> str | None:
    """Why a connection to ``address`` is refused by default, or None for a public one."""
    target = canonical_address(address)
    checks: tuple[tuple[bool, str], ...] = (
        (target in METADATA_ADDRESSES, "a cloud metadata address"),
        (target.is_unspecified, "the unspecified address"),
        (target.is_loopback, "loopback"),
        (target.is_link_local, "link-local"),
        (target.is_multicast, "multicast"),
        (isinstance(target, ipaddress.IPv6Address) and target.is_site_local, "site-local"),
        (target.is_private, "private"),
    )
    for refused, reason in checks:
        if refused:
            return reason
    if isinstance(target, ipaddress.IPv6Address):
        relayed = target.sixtofour or (target.teredo[1] if target.teredo else None)
        if relayed is not None and address_problem(relayed) is not None:
            return f"a tunnel to {relayed}, which is {address_problem(relayed)}"
    if target.is_reserved or not target.is_global:
        return "not globally routable"
    return None


def system_resolver(host: str, port: int) -> Sequence[str]:
    """Every address the system resolver gives for ``host`` (DNS, hosts file ...)."""
    answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for _family, _type, _proto, _name, sockaddr in answers]


def vet_host(
    host: str, port: int, policy: AddressPolicy, *, resolve: Resolver = system_resolver
) -> tuple[IPAddress, ...]:
    """The addresses a connection to ``host`` may use, in resolver order.

    Raises ``InputRejected(SSRF_REFUSED)`` when the host, or any address it resolves to,
    is not admitted; ``OSError`` when it does not resolve (a transient failure).
    """
    literal = parse_ip_literal(host)
    if literal is not None:
        _require_admitted(literal, host, policy, host_name=None)
        return (canonical_address(literal),)
    name = normalize_host_name(host)
    addresses: list[IPAddress] = []
    for answer in resolve(name, port):
        address = ipaddress.ip_address(answer.split("%", 1)[0])
        _require_admitted(address, host, policy, host_name=name)
        target = canonical_address(address)
        if target not in addresses:
            addresses.append(target)
    if not addresses:
        raise OSError(f"{host}: the name has no address")
    return tuple(addresses)


def _require_admitted(
    address: IPAddress, host: str, policy: AddressPolicy, *, host_name: str | None
) -> None:
    if policy.admits(address, host_name=host_name):
        return
    shown = host if host_name is None else f"{host} ({address})"
    problem = address_problem(address)
    raise InputRejected(
        SSRF_REFUSED,
        f"{shown} is {problem}; add it to [https] allow_networks to fetch from it",
    )
