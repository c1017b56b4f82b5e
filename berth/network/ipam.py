"""IP address management over one subnet, as arithmetic on address ranges.

Addresses are handled as integers and pools as inclusive ranges, so counting a /64 or finding its
lowest free address costs time in the number of pools and used addresses, never in the size of
the subnet. The store keeps the used addresses (one row per allocation, unique per subnet, which
settles races); these functions only decide. A port's address is found without reading them all:
the store keeps each one's offset in its subnet and searches those in SQL for the lowest gap
(``allocate_lowest_by_search``), with the same answer as ``allocate_lowest`` over the whole set.

Reserved addresses: an IPv4 subnet's network and broadcast addresses and an IPv6 subnet's first
address (the subnet-router anycast address), except on point-to-point subnets (/31 and /32,
/127 and /128) whose every address is usable.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import itertools
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal, Protocol

from berth.network import exceptions
from berth.network.exceptions import IpAddressInUse

__all__ = [
    "AUTO",
    "OFFSET_LIMIT",
    "InvalidIpForSubnet",
    "InvalidSubnet",
    "IpAddressExhausted",
    "IpAddressInUse",
    "SubnetLayout",
    "address_offset",
    "allocatable_count",
    "allocate_lowest",
    "allocate_lowest_by_search",
    "allocate_specific",
    "eui64_address",
    "plan_subnet",
    "pool_size",
    "release",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class InvalidSubnet(exceptions.InvalidInput):
    """The subnet's cidr, gateway or pools cannot work."""

    @property
    def type(self) -> str:
        return "InvalidInput"


class InvalidIpForSubnet(exceptions.BadRequest):
    """A requested address that no port of the subnet may have."""


class IpAddressExhausted(exceptions.IpAddressGenerationFailure):
    """No address is left in the subnet's pools."""

    @property
    def type(self) -> str:
        # The name clients (Nova among them) recognise for "no address left".
        return "IpAddressGenerationFailure"


class _Auto(Enum):
    AUTO = "auto"


# Give ``plan_subnet`` this gateway to get the default (the first usable address); None is "none".
AUTO: Final = _Auto.AUTO


class Addressed(Protocol):
    @property
    def ip_version(self) -> Literal[4, 6]: ...
    @property
    def cidr(self) -> str: ...
    @property
    def gateway_ip(self) -> str | None: ...
    @property
    def allocation_pools(self) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True, slots=True)
class SubnetLayout:
    """A validated subnet's addressing, normalised (the cidr without host bits set)."""

    ip_version: Literal[4, 6]
    cidr: str
    gateway_ip: str | None
    allocation_pools: tuple[tuple[str, str], ...]


# -- parsing and validation ---------------------------------------------------------------------


def parse_cidr(cidr: str, ip_version: int | None = None) -> Network:
    if "/" not in cidr:
        raise InvalidSubnet(f"Invalid input for cidr. Reason: '{cidr}' is not a valid CIDR.")
    try:
        interface = ipaddress.ip_interface(cidr)
    except ValueError:
        raise InvalidSubnet(
            f"Invalid input for cidr. Reason: '{cidr}' is not a valid CIDR."
        ) from None
    network = interface.network
    if interface.ip != network.network_address:
        raise InvalidSubnet(
            f"Invalid input for cidr. Reason: '{cidr}' has host bits set; use '{network}'."
        )
    if ip_version is not None and network.version != ip_version:
        raise InvalidSubnet(f"Cidr {cidr} is not an IPv{ip_version} network.")
    return network


def usable_range(network: Network) -> tuple[int, int]:
    """The first and last address a port may have (see the module's note on reserved ones)."""
    first, last = int(network.network_address), int(network.broadcast_address)
    if network.num_addresses <= 2:
        return first, last
    return first + 1, (last - 1 if network.version == 4 else last)


def plan_subnet(
    cidr: str,
    ip_version: int | None = None,
    gateway_ip: str | _Auto | None = AUTO,
    allocation_pools: Sequence[tuple[str, str]] | None = None,
) -> SubnetLayout:
    """Validate a subnet's addressing and fill in the defaults: the gateway is the first usable
    address; the pools are every usable address but the gateway."""
    network = parse_cidr(cidr, ip_version)
    low, high = usable_range(network)
    gateway: int | None
    if gateway_ip is AUTO:
        gateway = low
    elif gateway_ip is None:
        gateway = None
    else:
        gateway = _address_in(network, gateway_ip, "gateway_ip")
        if not low <= gateway <= high:
            raise InvalidSubnet(
                f"Gateway ip {gateway_ip} conflicts with a reserved address of {network}."
            )
    if allocation_pools is None:
        pools = _without(low, high, gateway)
    else:
        pools = _checked_pools(network, allocation_pools, low, high)
        holder = None if gateway is None else _position(pools, gateway)
        if gateway is not None and holder is not None:
            first, last = _range_text(network, pools[holder])
            raise InvalidSubnet(
                f"Gateway ip {_text(network, gateway)} conflicts with allocation pool {first}-{last}."
            )
    return SubnetLayout(
        ip_version=network.version,  # type: ignore[arg-type]
        cidr=str(network),
        gateway_ip=None if gateway is None else _text(network, gateway),
        allocation_pools=tuple(_range_text(network, r) for r in pools),
    )


def _address_in(network: Network, address: str, what: str) -> int:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        raise InvalidSubnet(
            f"Invalid input for {what}. Reason: '{address}' is not a valid IP address."
        ) from None
    if parsed.version != network.version or parsed not in network:
        raise InvalidSubnet(f"The {what} {address} is not inside the subnet {network}.")
    return int(parsed)


def _checked_pools(
    network: Network, given: Sequence[tuple[str, str]], low: int, high: int
) -> list[tuple[int, int]]:
    pools = []
    for start, end in given:
        first = _address_in(network, start, "allocation pool start")
        last = _address_in(network, end, "allocation pool end")
        if first > last:
            raise InvalidSubnet(f"Allocation pool {start}-{end} ends before it starts.")
        if first < low or last > high:
            raise InvalidSubnet(
                f"Allocation pool {start}-{end} holds a reserved address of {network}."
            )
        pools.append((first, last))
    pools.sort()
    for before, after in itertools.pairwise(pools):
        if after[0] <= before[1]:
            raise InvalidSubnet(
                "Allocation pools {}-{} and {}-{} overlap.".format(
                    *_range_text(network, before), *_range_text(network, after)
                )
            )
    return pools


def _without(low: int, high: int, gateway: int | None) -> list[tuple[int, int]]:
    if gateway is None or not low <= gateway <= high:
        return [(low, high)]
    return [r for r in ((low, gateway - 1), (gateway + 1, high)) if r[0] <= r[1]]


def _text(network: Network, value: int) -> str:
    # Not ip_address(value): a small integer would come back as an IPv4 address.
    return str(
        ipaddress.IPv4Address(value) if network.version == 4 else ipaddress.IPv6Address(value)
    )


def _range_text(network: Network, r: tuple[int, int]) -> tuple[str, str]:
    return _text(network, r[0]), _text(network, r[1])


# -- counting and allocating ----------------------------------------------------------------------


def _pools(subnet: Addressed) -> tuple[tuple[int, int], ...]:
    """The subnet's pools as sorted integer ranges (stored pools are valid; see plan_subnet)."""
    return _pool_ranges(subnet.allocation_pools)


# Every port's address parses its subnet's cidr and pools again, and they are few: kept parsed.
_LAYOUTS_KEPT = 1024


@functools.lru_cache(maxsize=_LAYOUTS_KEPT)
def _pool_ranges(pools: tuple[tuple[str, str], ...]) -> tuple[tuple[int, int], ...]:
    return tuple(
        sorted(
            (int(ipaddress.ip_address(first)), int(ipaddress.ip_address(last)))
            for first, last in pools
        )
    )


@functools.lru_cache(maxsize=_LAYOUTS_KEPT)
def _stored_network(cidr: str) -> Network:
    """A stored (so valid) subnet's cidr, parsed."""
    return parse_cidr(cidr)


def _position(pools: Sequence[tuple[int, int]], value: int) -> int | None:
    """The index of the pool holding ``value``, by bisection."""
    index = bisect.bisect_right(pools, (value, float("inf"))) - 1
    if index >= 0 and pools[index][0] <= value <= pools[index][1]:
        return index
    return None


# Every used address of a subnet is parsed on each allocation, and the same ones come back
# each time: remembered, a lookup costs a fifth of a parse. (A subnet with more used addresses
# than this parses some again.)
_PARSED_KEPT = 16384


@functools.lru_cache(maxsize=_PARSED_KEPT)
def _integer(address: str, version: int) -> int | None:
    """``address`` as an integer, or None when it is not of IP ``version``. The C parser first,
    ten times faster than ipaddress's; ipaddress for a form it does not take."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    if (family == socket.AF_INET6) != (version == 6):
        return None
    try:
        return int.from_bytes(socket.inet_pton(family, address), "big")
    except OSError:
        parsed = ipaddress.ip_address(address)
        return int(parsed) if parsed.version == version else None


def _blocked(subnet: Addressed, used: Iterable[str]) -> set[int]:
    """The addresses no port may get, as integers: the used ones and the gateway (valid pools
    never hold the gateway; an old stored pool that does still must not hand it out)."""
    blocked = [*used, *([subnet.gateway_ip] if subnet.gateway_ip else [])]
    return {v for a in blocked if (v := _integer(a, subnet.ip_version)) is not None}


def _taken(subnet: Addressed, pools: Sequence[tuple[int, int]], used: Iterable[str]) -> list[int]:
    """The distinct pool addresses no port may get, sorted."""
    return sorted(v for v in _blocked(subnet, used) if _position(pools, v) is not None)


def pool_size(subnet: Addressed) -> int:
    """How many addresses the pools hold in all."""
    return sum(last - first + 1 for first, last in _pools(subnet))


def allocatable_count(subnet: Addressed, used: Iterable[str]) -> int:
    """How many pool addresses are still free (used addresses outside the pools take none)."""
    pools = _pools(subnet)
    return sum(last - first + 1 for first, last in pools) - len(_taken(subnet, pools, used))


def allocate_lowest(subnet: Addressed, used: Iterable[str]) -> str:
    """The lowest free pool address; IpAddressExhausted when there is none."""
    blocked = _blocked(subnet, used)
    for first, last in _pools(subnet):
        # Walk the run of blocked addresses from the pool's start; the first gap is free. The
        # walk takes at most one step per blocked address: cheaper than sorting them all, which
        # each port's address would otherwise do for every used address of its subnet.
        candidate = first
        while candidate <= last and candidate in blocked:
            candidate += 1
        if candidate <= last:
            return _text(_stored_network(subnet.cidr), candidate)
    raise IpAddressExhausted(f"No more IP addresses available on subnet {subnet.cidr}.")


# A store keeps each used address's offset in its subnet (the address minus the subnet's network
# address) as a signed 64-bit integer, and finds the lowest gap in SQL; offsets from here on
# (the far half of an IPv6 /64, or more) it does not keep.
OFFSET_LIMIT: Final = 2**63

# The lowest offset in [first, last] (last < OFFSET_LIMIT) that no used address has; None when
# each has one.
LowestUnused = Callable[[int, int], int | None]


def address_offset(subnet: Addressed, address: str) -> int | None:
    """``address``'s place in ``subnet`` as a store keeps it (see ``OFFSET_LIMIT``); None when
    it is not a subnet address of the subnet's IP version or lies beyond the limit."""
    value = _integer(address, subnet.ip_version)
    if value is None:
        return None
    network = _stored_network(subnet.cidr)
    offset = value - int(network.network_address)
    return offset if 0 <= offset < min(network.num_addresses, OFFSET_LIMIT) else None


def allocate_lowest_by_search(subnet: Addressed, lowest_unused: LowestUnused) -> str | None:
    """What ``allocate_lowest`` answers, from a search of the used offsets rather than every
    used address: the lowest free pool address, IpAddressExhausted when there is none, or None
    when the answer may lie beyond the offsets the store keeps (the caller then asks
    ``allocate_lowest``)."""
    network = _stored_network(subnet.cidr)
    base = int(network.network_address)
    gateway = None if subnet.gateway_ip is None else address_offset(subnet, subnet.gateway_ip)
    for first, last in _pools(subnet):
        start, end = first - base, min(last - base, OFFSET_LIMIT - 1)
        while start <= end:
            found = lowest_unused(start, end)
            if found is None:
                break
            if found != gateway:
                return _text(network, base + found)
            # The gateway has no row unless a router holds it, and no port may get it.
            start = found + 1
        if last - base > end:
            return None
    raise IpAddressExhausted(f"No more IP addresses available on subnet {subnet.cidr}.")


def allocate_specific(subnet: Addressed, address: str, used: Iterable[str]) -> str:
    """Check that a port may have ``address`` and return it normalised. It must be inside the
    cidr, not a reserved address, not the gateway and not in use; it may lie outside the pools
    (an operator placing a fixed address on purpose)."""
    network = parse_cidr(subnet.cidr)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        raise InvalidIpForSubnet(f"IP address {address} is not a valid IP address.") from None
    if parsed.version != network.version or parsed not in network:
        raise InvalidIpForSubnet(
            f"IP address {address} is not a valid IP for the subnet {network}."
        )
    low, high = usable_range(network)
    if not low <= int(parsed) <= high:
        raise InvalidIpForSubnet(
            f"IP address {address} is a reserved address of the subnet {network}."
        )
    if subnet.gateway_ip is not None and parsed == ipaddress.ip_address(subnet.gateway_ip):
        raise InvalidIpForSubnet(f"IP address {address} is the gateway of the subnet {network}.")
    if any(ipaddress.ip_address(u) == parsed for u in used):
        raise IpAddressInUse(f"IP address {parsed} is already allocated in subnet {network}.")
    return str(parsed)


def eui64_address(cidr: str, mac: str) -> str:
    """The address a host makes from the prefix and its MAC address (modified EUI-64, RFC
    4291 appendix A): ff:fe in the middle of the MAC, its universal/local bit inverted."""
    network = parse_cidr(cidr, 6)
    octets = bytes.fromhex(mac.replace(":", ""))
    interface_id = int.from_bytes(octets[:3] + b"\xff\xfe" + octets[3:], "big") ^ (1 << 57)
    return str(ipaddress.IPv6Address(int(network.network_address) + interface_id))


def release(used: Iterable[str], address: str) -> frozenset[str]:
    """The used set without ``address``; releasing a free address changes nothing, so a release
    delivered twice is harmless."""
    gone = ipaddress.ip_address(address)
    return frozenset(u for u in used if ipaddress.ip_address(u) != gone)
