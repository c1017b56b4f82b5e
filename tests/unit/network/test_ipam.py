"""IPAM: subnet validation, exact counting, lowest-free and specific allocation, release."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.network import ipam
from berth.network.ipam import (
    InvalidIpForSubnet,
    InvalidSubnet,
    IpAddressExhausted,
    IpAddressInUse,
    SubnetLayout,
)

# -- plan_subnet: defaults ------------------------------------------------------------------------


def test_ipv4_defaults_gateway_first_host_and_pools_the_rest() -> None:
    layout = ipam.plan_subnet("10.0.0.0/24", 4)
    assert layout == SubnetLayout(4, "10.0.0.0/24", "10.0.0.1", (("10.0.0.2", "10.0.0.254"),))
    assert ipam.pool_size(layout) == 253


def test_ipv4_gateway_in_the_middle_splits_the_default_pool() -> None:
    layout = ipam.plan_subnet("10.0.0.0/24", gateway_ip="10.0.0.100")
    assert layout.allocation_pools == (("10.0.0.1", "10.0.0.99"), ("10.0.0.101", "10.0.0.254"))


def test_no_gateway_leaves_every_host_address_in_the_pool() -> None:
    layout = ipam.plan_subnet("192.168.1.0/29", gateway_ip=None)
    assert layout.gateway_ip is None
    assert layout.allocation_pools == (("192.168.1.1", "192.168.1.6"),)


def test_ipv6_excludes_the_subnet_router_anycast_and_keeps_the_last_address() -> None:
    layout = ipam.plan_subnet("2001:db8::/64")
    assert layout.ip_version == 6
    assert layout.gateway_ip == "2001:db8::1"
    assert layout.allocation_pools == (("2001:db8::2", "2001:db8::ffff:ffff:ffff:ffff"),)
    assert ipam.pool_size(layout) == 2**64 - 2


def test_point_to_point_subnets_use_every_address() -> None:
    assert ipam.plan_subnet("10.0.0.0/31", gateway_ip=None).allocation_pools == (
        ("10.0.0.0", "10.0.0.1"),
    )
    assert ipam.plan_subnet("2001:db8::/127", gateway_ip=None).allocation_pools == (
        ("2001:db8::", "2001:db8::1"),
    )


def test_explicit_pools_are_kept_sorted() -> None:
    layout = ipam.plan_subnet(
        "10.0.0.0/24", allocation_pools=[("10.0.0.200", "10.0.0.210"), ("10.0.0.10", "10.0.0.20")]
    )
    assert layout.allocation_pools == (("10.0.0.10", "10.0.0.20"), ("10.0.0.200", "10.0.0.210"))
    assert ipam.pool_size(layout) == 22


def test_ipv6_text_is_normalised() -> None:
    layout = ipam.plan_subnet("2001:DB8:0::/64", gateway_ip="2001:db8:0:0::ff")
    assert layout.cidr == "2001:db8::/64"
    assert layout.gateway_ip == "2001:db8::ff"


# -- plan_subnet: refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cidr", "version", "gateway", "pools"),
    [
        ("10.0.0.0/33", None, ipam.AUTO, None),  # not a cidr
        ("banana", None, ipam.AUTO, None),
        ("10.0.0.0", None, ipam.AUTO, None),  # no prefix length
        ("10.0.0.5/24", None, ipam.AUTO, None),  # host bits set
        ("10.0.0.0/24", 6, ipam.AUTO, None),  # wrong version
        ("2001:db8::/64", 4, ipam.AUTO, None),
        ("10.0.0.0/24", None, "10.0.1.1", None),  # gateway outside
        ("10.0.0.0/24", None, "2001:db8::1", None),
        ("10.0.0.0/24", None, "10.0.0.0", None),  # gateway is the network address
        ("10.0.0.0/24", None, "10.0.0.255", None),  # gateway is the broadcast address
        ("2001:db8::/64", None, "2001:db8::", None),  # gateway is the subnet-router anycast
        ("10.0.0.0/24", None, "not-an-ip", None),
        ("10.0.0.0/24", None, ipam.AUTO, [("10.0.0.1", "10.0.0.10")]),  # gateway in pool
        ("10.0.0.0/24", None, None, [("10.0.0.0", "10.0.0.10")]),  # pool holds network addr
        ("10.0.0.0/24", None, None, [("10.0.0.250", "10.0.0.255")]),  # pool holds broadcast
        ("10.0.0.0/24", None, None, [("10.0.0.250", "10.0.1.5")]),  # pool leaves the cidr
        ("10.0.0.0/24", None, None, [("10.0.0.20", "10.0.0.10")]),  # reversed
        ("10.0.0.0/24", None, None, [("10.0.0.1", "10.0.0.10"), ("10.0.0.10", "10.0.0.20")]),
        ("2001:db8::/64", None, None, [("2001:db8::", "2001:db8::9")]),
    ],
)
def test_invalid_subnets_are_refused(
    cidr: str, version: int | None, gateway: str | None, pools: list[tuple[str, str]] | None
) -> None:
    with pytest.raises(InvalidSubnet) as caught:
        ipam.plan_subnet(cidr, version, gateway, pools)
    assert caught.value.status == 400
    assert caught.value.type == "InvalidInput"
    assert str(caught.value)


def test_host_bits_message_names_the_right_cidr() -> None:
    with pytest.raises(InvalidSubnet, match=r"10\.0\.0\.0/24"):
        ipam.plan_subnet("10.0.0.5/24")


# -- counting -------------------------------------------------------------------------------------


def test_count_of_a_slash_64_is_exact_without_enumerating() -> None:
    layout = ipam.plan_subnet("2001:db8::/64")
    used = ["2001:db8::2", "2001:DB8:0::2", "2001:db8::ffff", "2001:db8::1"]  # dup, gateway
    assert ipam.allocatable_count(layout, used) == 2**64 - 2 - 2


def test_count_ignores_used_addresses_outside_the_pools() -> None:
    layout = ipam.plan_subnet("10.0.0.0/24", allocation_pools=[("10.0.0.10", "10.0.0.19")])
    assert ipam.allocatable_count(layout, ["10.0.0.5", "10.0.0.10", "10.0.0.19"]) == 8


def test_count_of_a_huge_pool_with_many_used_addresses() -> None:
    layout = ipam.plan_subnet("2001:db8::/48")
    used = [str(ipaddress.IPv6Address("2001:db8::2") + i) for i in range(20000)]
    assert ipam.allocatable_count(layout, used) == 2**80 - 2 - 20000
    assert ipam.allocate_lowest(layout, used) == str(ipaddress.IPv6Address("2001:db8::2") + 20000)


# -- lowest free ----------------------------------------------------------------------------------


def test_lowest_free_skips_used_and_moves_to_the_next_pool() -> None:
    layout = ipam.plan_subnet(
        "10.0.0.0/24", allocation_pools=[("10.0.0.10", "10.0.0.11"), ("10.0.0.50", "10.0.0.60")]
    )
    assert ipam.allocate_lowest(layout, []) == "10.0.0.10"
    assert ipam.allocate_lowest(layout, ["10.0.0.10"]) == "10.0.0.11"
    assert ipam.allocate_lowest(layout, ["10.0.0.10", "10.0.0.11"]) == "10.0.0.50"
    assert ipam.allocate_lowest(layout, ["10.0.0.10", "10.0.0.11", "10.0.0.50"]) == "10.0.0.51"


def test_lowest_free_fills_a_hole() -> None:
    layout = ipam.plan_subnet("10.0.0.0/29")  # pool .2-.6
    assert ipam.allocate_lowest(layout, ["10.0.0.2", "10.0.0.4"]) == "10.0.0.3"


def test_exhaustion_raises_a_conflict_clients_recognise() -> None:
    layout = ipam.plan_subnet("10.0.0.0/30")  # pool .2 only
    assert ipam.allocatable_count(layout, []) == 1
    assert ipam.allocate_lowest(layout, []) == "10.0.0.2"
    assert ipam.allocatable_count(layout, ["10.0.0.2"]) == 0
    with pytest.raises(IpAddressExhausted) as caught:
        ipam.allocate_lowest(layout, ["10.0.0.2"])
    assert caught.value.status == 409
    assert caught.value.type == "IpAddressGenerationFailure"
    assert "10.0.0.0/30" in str(caught.value)


def test_adjacent_pools_are_walked_separately() -> None:
    # A run of used addresses that crosses from one pool into the next must not be skipped twice.
    layout = ipam.plan_subnet(
        "10.0.0.0/28",
        gateway_ip=None,
        allocation_pools=[
            ("10.0.0.2", "10.0.0.2"),
            ("10.0.0.3", "10.0.0.3"),
            ("10.0.0.9", "10.0.0.9"),
        ],
    )
    assert ipam.allocate_lowest(layout, ["10.0.0.2"]) == "10.0.0.3"
    assert ipam.allocate_lowest(layout, ["10.0.0.2", "10.0.0.3"]) == "10.0.0.9"


def test_addresses_of_the_other_version_take_nothing() -> None:
    layout = ipam.plan_subnet("10.0.0.0/29", gateway_ip=None)  # pool .1-.6
    same_integer = str(ipaddress.IPv6Address(int(ipaddress.IPv4Address("10.0.0.1"))))
    assert ipam.allocatable_count(layout, [same_integer]) == 6
    assert ipam.allocate_lowest(layout, [same_integer]) == "10.0.0.1"


def test_a_subnet_without_pools_has_nothing_to_allocate() -> None:
    layout = ipam.plan_subnet("10.0.0.0/24", allocation_pools=[])
    assert ipam.allocatable_count(layout, []) == 0
    with pytest.raises(IpAddressExhausted):
        ipam.allocate_lowest(layout, [])


def test_ipv6_lowest_free_is_ipv6_text_even_for_small_values() -> None:
    layout = ipam.plan_subnet("::/120")
    assert ipam.allocate_lowest(layout, ["::2"]) == "::3"


def test_a_stored_pool_holding_the_gateway_never_hands_it_out() -> None:
    legacy = SubnetLayout(4, "10.0.0.0/29", "10.0.0.1", (("10.0.0.1", "10.0.0.3"),))
    assert ipam.allocate_lowest(legacy, []) == "10.0.0.2"
    assert ipam.allocatable_count(legacy, []) == 2


# -- a specific address ---------------------------------------------------------------------------

SUBNET = ipam.plan_subnet("10.0.0.0/24", allocation_pools=[("10.0.0.100", "10.0.0.200")])
SUBNET6 = ipam.plan_subnet("2001:db8::/64")


def test_a_specific_address_may_lie_outside_the_pools() -> None:
    assert ipam.allocate_specific(SUBNET, "10.0.0.5", ["10.0.0.6"]) == "10.0.0.5"
    assert ipam.allocate_specific(SUBNET, "10.0.0.150", []) == "10.0.0.150"


def test_a_specific_ipv6_address_is_normalised() -> None:
    assert ipam.allocate_specific(SUBNET6, "2001:DB8:0::0005", []) == "2001:db8::5"
    assert (
        ipam.allocate_specific(SUBNET6, "2001:db8::ffff:ffff:ffff:ffff", [])
        == "2001:db8::ffff:ffff:ffff:ffff"
    )


@pytest.mark.parametrize(
    ("subnet", "address"),
    [
        (SUBNET, "10.0.1.5"),  # outside the cidr
        (SUBNET, "2001:db8::5"),  # other version
        (SUBNET, "10.0.0.300"),  # not an address
        (SUBNET, "10.0.0.0"),  # network address
        (SUBNET, "10.0.0.255"),  # broadcast address
        (SUBNET, "10.0.0.1"),  # gateway
        (SUBNET6, "2001:db8::"),  # subnet-router anycast
        (SUBNET6, "2001:db8::1"),  # gateway
        (SUBNET6, "2001:db9::5"),
    ],
)
def test_specific_addresses_no_port_may_have(subnet: SubnetLayout, address: str) -> None:
    with pytest.raises(InvalidIpForSubnet) as caught:
        ipam.allocate_specific(subnet, address, [])
    assert caught.value.status == 400
    assert caught.value.type == "InvalidIpForSubnet"
    assert address in str(caught.value)


def test_a_specific_address_in_use_is_a_conflict() -> None:
    with pytest.raises(IpAddressInUse) as caught:
        ipam.allocate_specific(SUBNET6, "2001:db8::7", ["2001:DB8::0007"])
    assert caught.value.status == 409
    assert caught.value.type == "IpAddressInUse"


# -- release --------------------------------------------------------------------------------------


def test_release_frees_the_address_and_is_idempotent() -> None:
    used = frozenset({"10.0.0.2", "10.0.0.3"})
    after = ipam.release(used, "10.0.0.2")
    assert after == {"10.0.0.3"}
    assert ipam.release(after, "10.0.0.2") == after
    assert ipam.allocate_lowest(SUBNET, ipam.release({"10.0.0.100"}, "10.0.0.100")) == "10.0.0.100"
    assert ipam.release({"2001:db8::5"}, "2001:DB8::0005") == frozenset()


# -- against enumeration on small subnets ---------------------------------------------------------


@st.composite
def small_subnets(draw: st.DrawFn) -> tuple[SubnetLayout, list[str]]:
    cidr = draw(st.sampled_from(["10.0.0.0/28", "2001:db8::/124", "10.9.8.0/29", "::/125"]))
    network = ipaddress.ip_network(cidr)
    low, high = ipam.usable_range(network)
    gateway = draw(st.none() | st.integers(low, high))
    pools: list[tuple[int, int]] = []
    current: list[int] = []
    for value in range(low, high + 1):
        if value != gateway and draw(st.booleans()):
            current.append(value)
        if current and (value in (gateway, high) or draw(st.booleans())):
            pools.append((current[0], current[-1]))
            current = []
    if current:
        pools.append((current[0], current[-1]))

    def text(value: int) -> str:
        kind = ipaddress.IPv4Address if network.version == 4 else ipaddress.IPv6Address
        return str(kind(value))

    use_default = draw(st.booleans())
    layout = ipam.plan_subnet(
        cidr,
        gateway_ip=None if gateway is None else text(gateway),
        allocation_pools=None if use_default else [(text(a), text(b)) for a, b in pools],
    )
    everything = [text(int(network.network_address) + i) for i in range(network.num_addresses)]
    used = draw(st.lists(st.sampled_from(everything), max_size=len(everything)))
    return layout, used


def _reference(layout: SubnetLayout, used: list[str]) -> list[int]:
    """Every free pool address, by enumeration."""
    taken = {int(ipaddress.ip_address(u)) for u in used}
    if layout.gateway_ip:
        taken.add(int(ipaddress.ip_address(layout.gateway_ip)))
    return [
        value
        for first, last in layout.allocation_pools
        for value in range(int(ipaddress.ip_address(first)), int(ipaddress.ip_address(last)) + 1)
        if value not in taken
    ]


@given(small_subnets())
def test_counting_and_lowest_free_match_enumeration(case: tuple[SubnetLayout, list[str]]) -> None:
    layout, used = case
    free = _reference(layout, used)
    assert ipam.allocatable_count(layout, used) == len(free)
    if free:
        assert int(ipaddress.ip_address(ipam.allocate_lowest(layout, used))) == min(free)
    else:
        with pytest.raises(IpAddressExhausted):
            ipam.allocate_lowest(layout, used)


@given(small_subnets(), st.integers(0, 15))
def test_specific_allocation_matches_its_definition(
    case: tuple[SubnetLayout, list[str]], offset: int
) -> None:
    layout, used = case
    network = ipaddress.ip_network(layout.cidr)
    address = network.network_address + (offset % network.num_addresses)
    low, high = ipam.usable_range(network)
    taken = {ipaddress.ip_address(u) for u in used}
    gateway = ipaddress.ip_address(layout.gateway_ip) if layout.gateway_ip else None
    if not low <= int(address) <= high or address == gateway:
        with pytest.raises(InvalidIpForSubnet):
            ipam.allocate_specific(layout, str(address), used)
    elif address in taken:
        with pytest.raises(IpAddressInUse):
            ipam.allocate_specific(layout, str(address), used)
    else:
        assert ipam.allocate_specific(layout, str(address), used) == str(address)


@given(small_subnets(), st.sampled_from(["exploded", "upper", "mapped"]))
def test_used_addresses_count_the_same_in_any_valid_spelling(
    case: tuple[SubnetLayout, list[str]], spelling: str
) -> None:
    """Used addresses are parsed by the C parser first: every spelling ipaddress reads as the
    same address takes the same room, and an IPv4-mapped IPv6 address takes none in an IPv4
    subnet."""
    layout, used = case

    def spelled(address: str) -> str:
        parsed = ipaddress.ip_address(address)
        if spelling == "exploded":
            return parsed.exploded
        if spelling == "upper":
            return address.upper()
        return f"::ffff:{parsed}" if parsed.version == 4 else address

    respelled = [spelled(a) for a in used]
    if spelling == "mapped" and layout.ip_version == 4:
        assert ipam.allocatable_count(layout, respelled) == ipam.allocatable_count(layout, [])
    else:
        assert ipam.allocatable_count(layout, respelled) == ipam.allocatable_count(layout, used)


# -- the lowest free address from a search of used offsets (as the store finds it in SQL) --------


def _search_of(layout: SubnetLayout, used: list[str]) -> ipam.LowestUnused:
    """A search over the offsets the store would keep for ``used``, as its SQL answers."""
    offsets = {o for u in used if (o := ipam.address_offset(layout, u)) is not None}

    def lowest_unused(first: int, last: int) -> int | None:
        assert 0 <= first <= last < ipam.OFFSET_LIMIT
        return next((o for o in range(first, last + 1) if o not in offsets), None)

    return lowest_unused


@given(small_subnets(), st.sampled_from(["plain", "exploded", "upper"]))
def test_the_search_of_used_offsets_finds_what_the_used_set_does(
    case: tuple[SubnetLayout, list[str]], spelling: str
) -> None:
    layout, used = case
    spelled = [
        ipaddress.ip_address(u).exploded if spelling == "exploded" else u.upper()
        if spelling == "upper" else u
        for u in used
    ]  # fmt: skip
    try:
        expected = ipam.allocate_lowest(layout, spelled)
    except IpAddressExhausted:
        with pytest.raises(IpAddressExhausted):
            ipam.allocate_lowest_by_search(layout, _search_of(layout, spelled))
    else:
        assert ipam.allocate_lowest_by_search(layout, _search_of(layout, spelled)) == expected


def test_the_search_skips_a_gateway_an_old_pool_still_holds() -> None:
    layout = SubnetLayout(4, "10.0.0.0/29", "10.0.0.2", (("10.0.0.1", "10.0.0.6"),))
    assert ipam.allocate_lowest_by_search(layout, _search_of(layout, ["10.0.0.1"])) == "10.0.0.3"


def test_offsets_are_kept_below_the_limit_only() -> None:
    layout = ipam.plan_subnet("2001:db8::/64", 6)
    assert ipam.address_offset(layout, "2001:db8::5") == 5
    assert ipam.address_offset(layout, "2001:db8::7fff:ffff:ffff:ffff") == ipam.OFFSET_LIMIT - 1
    assert ipam.address_offset(layout, "2001:db8::8000:0:0:0") is None
    assert ipam.address_offset(layout, "2001:db9::5") is None
    assert ipam.address_offset(layout, "10.0.0.5") is None


def test_the_search_gives_way_when_the_lowest_may_lie_beyond_the_limit() -> None:
    """A /64's pool runs past what the store keeps offsets of: with every kept one used, the
    answer is the set's (None tells the caller to ask it)."""
    layout = ipam.plan_subnet("2001:db8::/64", 6)
    asked: list[tuple[int, int]] = []

    def all_used(first: int, last: int) -> None:
        asked.append((first, last))

    assert ipam.allocate_lowest_by_search(layout, all_used) is None
    assert asked == [(2, ipam.OFFSET_LIMIT - 1)]
    pools = (("2001:db8::8000:0:0:0", "2001:db8::8000:0:0:9"),)
    beyond = SubnetLayout(6, "2001:db8::/64", None, pools)
    assert ipam.allocate_lowest_by_search(beyond, all_used) is None
