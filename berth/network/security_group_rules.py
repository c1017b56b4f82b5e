"""What a security group rule may say, as upstream's API checks it, and what it matches.

A rule is read from a request into a :class:`Rule`, refused with a 400 that names the problem:
direction ``ingress``/``egress``; ethertype ``IPv4``/``IPv6`` (IPv4 by default); a protocol by
name (``tcp``) or number (``0`` to ``255``), or none (``any``) for every protocol; port ranges
only with a protocol, 1 to 65535 with ``min <= max`` for the port protocols (TCP, UDP, UDP-Lite,
SCTP, DCCP), the ICMP type in ``port_range_min`` and code in ``port_range_max`` (0 to 255, no
code without a type) for ICMP; a ``remote_ip_prefix`` of the rule's ethertype, or a
``remote_group_id``, not both.

Two rules of a group that match the same traffic are one too many (409): the
:func:`fingerprint` says what a rule matches, with protocols by number (``tcp`` and ``6`` are
one) and ICMP's names for IPv6 as one.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from berth.network import exceptions, validate

DIRECTIONS: Final = ("ingress", "egress")
ETHERTYPES: Final = ("IPv4", "IPv6")
# IANA's numbers of the protocols the API takes by name.
PROTOCOLS: Final[Mapping[str, int]] = {
    "ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1, "icmpv6": 58,
    "igmp": 2, "ip": 0, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58,
    "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46,
    "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112,
}  # fmt: skip
# Protocols whose port range is a range of ports, and those where it is an ICMP type and code.
PORT_PROTOCOLS: Final = frozenset({6, 17, 33, 132, 136})
ICMP_PROTOCOLS: Final = frozenset({1, 58})
_IPV6_ICMP: Final = frozenset({"icmpv6", "ipv6-icmp", "58"})
ATTRIBUTES: Final = frozenset(
    {
        "security_group_id", "direction", "ethertype", "protocol", "port_range_min",
        "port_range_max", "remote_ip_prefix", "remote_group_id", "description", "project_id",
        "tenant_id",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Rule:
    direction: str
    ethertype: str = "IPv4"
    protocol: str | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_group_id: str | None = None

    @property
    def protocol_number(self) -> int | None:
        if self.protocol is None:
            return None
        return int(self.protocol) if self.protocol.isdigit() else PROTOCOLS[self.protocol]

    @property
    def normalized_cidr(self) -> str | None:
        """The remote prefix without host bits (``10.0.0.5/24``: ``10.0.0.0/24``)."""
        if self.remote_ip_prefix is None:
            return None
        return str(ipaddress.ip_network(self.remote_ip_prefix, strict=False))

    def fingerprint(self) -> str:
        """What traffic the rule matches, as a key: equal for two rules that match the same."""
        number = self.protocol_number
        if number == 1 and self.ethertype == "IPv6":
            # "icmp" on an IPv6 rule means ICMPv6, as upstream takes it.
            number = 58
        prefix = self.normalized_cidr
        if prefix is not None and ipaddress.ip_network(prefix).prefixlen == 0:
            prefix = None  # every address: the same as no prefix
        key = "|".join(
            str(part)
            for part in (
                self.direction, self.ethertype, number, self.port_range_min,
                self.port_range_max, prefix, self.remote_group_id,
            )
        )  # fmt: skip
        return hashlib.sha256(key.encode()).hexdigest()


def parse(body: Mapping[str, Any]) -> Rule:
    """The rule a create body describes (besides its group, description and project)."""
    validate.known(body, ATTRIBUTES, "security_group_rule")
    direction = validate.one_of(body, "direction", DIRECTIONS)
    ethertype = validate.one_of(body, "ethertype", ETHERTYPES, "IPv4")
    protocol = _protocol(body.get("protocol"))
    low, high = _port(body, "port_range_min"), _port(body, "port_range_max")
    prefix = _prefix(body.get("remote_ip_prefix"), ethertype)
    remote_group = _remote_group(body.get("remote_group_id"))
    if prefix is not None and remote_group is not None:
        raise exceptions.SecurityGroupRemoteGroupAndRemoteIpPrefix(
            "Only remote_ip_prefix or remote_group_id may be provided."
        )
    rule = Rule(direction, ethertype, protocol, low, high, prefix, remote_group)
    _check_ports(rule)
    _check_protocol_for_ethertype(rule)
    return rule


def _remote_group(value: Any) -> str | None:
    """A group id; any other string names no group, a 404 when it is looked up (upstream's)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise exceptions.InvalidInput(
            f"Invalid input for remote_group_id. Reason: '{value}' is not a valid string."
        )
    return value


def _protocol(value: Any) -> str | None:
    if value is None or value == "" or (isinstance(value, str) and value.lower() == "any"):
        return None
    text = str(value).lower() if not isinstance(value, bool) else ""
    if text in PROTOCOLS:
        return text
    if text.isdigit() and 0 <= int(text) <= 255:
        return str(int(text))
    raise exceptions.SecurityGroupRuleInvalidProtocol(
        f"Security group rule protocol {value} not supported. Only protocol values "
        f"{[None, *sorted(PROTOCOLS)]} and integer representations [0 to 255] are supported."
    )


def _port(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(value)
        port = int(value)
    except ValueError:
        raise exceptions.InvalidInput(f"Invalid value for port {value}") from None
    if not 0 <= port <= 65535:
        raise exceptions.InvalidInput(f"Invalid value for port {port}")
    return port


def _prefix(value: Any, ethertype: str) -> str | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise exceptions.InvalidInput(
            f"Invalid input for remote_ip_prefix. Reason: '{value}' is not a valid IP prefix."
        ) from None
    if f"IPv{network.version}" != ethertype:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: Conflicting value ethertype {ethertype} for CIDR "
            f"{value}."
        )
    # Kept as given (host bits and all), as upstream keeps it; ``normalized_cidr`` shows the net.
    return value


def _check_ports(rule: Rule) -> None:
    low, high = rule.port_range_min, rule.port_range_max
    if low is None and high is None:
        return
    number = rule.protocol_number
    if rule.protocol is None:
        raise exceptions.SecurityGroupProtocolRequiredWithPorts(
            "Must also specify protocol if port range is given."
        )
    if number in PORT_PROTOCOLS:
        if low == 0 or high == 0:
            raise exceptions.SecurityGroupInvalidPortValue("Invalid value for port 0.")
        if low is None or high is None or low > high:
            raise exceptions.SecurityGroupInvalidPortRange(
                "For TCP/UDP protocols, port_range_min must be <= port_range_max"
            )
    elif number in ICMP_PROTOCOLS:
        limits = ((low, "type", "port_range_min"), (high, "code", "port_range_max"))
        for value, field, attribute in limits:
            if value is not None and not 0 <= value <= 255:
                raise exceptions.SecurityGroupInvalidIcmpValue(
                    f"Invalid value for ICMP {field} ({attribute}) {value}. It must be 0 to 255."
                )
        if low is None:
            raise exceptions.SecurityGroupMissingIcmpType(
                f"ICMP type (port-range-min) is missing for ICMP code (port-range-max) {high}."
            )
    else:
        raise exceptions.SecurityGroupInvalidProtocolForPortRange(
            f"Invalid protocol {rule.protocol} for port range, only supported for TCP, UDP, "
            "UDPLITE, SCTP, DCCP and ICMP."
        )


def _check_protocol_for_ethertype(rule: Rule) -> None:
    if rule.ethertype == "IPv4" and rule.protocol in _IPV6_ICMP:
        raise exceptions.SecurityGroupEthertypeConflictWithProtocol(
            f"Invalid ethertype {rule.ethertype} for protocol {rule.protocol}."
        )
