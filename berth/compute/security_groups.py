"""Security groups as the Compute API shows them: Nova's proxies of the network service's groups
(``os-security-groups``, ``os-security-group-rules``, below microversion 2.36), a server's
groups (those of its ports), and adding a server to a group or taking it out.

The compute service calls the network service as a service; what the caller may see and change
is decided here as the network service would decide it for the caller's own token: a group of
the caller's project (any project's for an admin). Refusals come back as Nova words them: a group
or rule that is not there is a 404, every other refusal of the network service a 400.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from berth.common.context import RequestContext
from berth.compute import exceptions, servers
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.service import ComputeService

T = TypeVar("T")
# The protocols Nova's proxy takes, and the ports a TCP or UDP rule may name.
_PROTOCOLS = ("tcp", "udp", "icmp")
_NOT_FOUND = ("SecurityGroupNotFound", "SecurityGroupRuleNotFound")
# Ids per list request of the network service: a page of a thousand servers' ids in one query
# string would pass what HTTP servers take in a request line.
_IDS_PER_REQUEST = 100


def _network(service: ComputeService) -> NetworkClient:
    if service.network is None:
        raise exceptions.BadRequest("Security groups need the network service.")
    return service.network


def _asked(call: Callable[[], T]) -> T:
    """The network service's answer, or its refusal in Nova's words."""
    try:
        return call()
    except NetworkError as exc:
        if exc.status == 404 or exc.kind in _NOT_FOUND:
            raise exceptions.NotFound(str(exc)) from None
        raise exceptions.BadRequest(str(exc)) from None


# -- groups ------------------------------------------------------------------------------------


def list_groups(
    service: ComputeService, context: RequestContext, all_projects: bool
) -> list[dict[str, Any]]:
    """The caller's project's groups (its default group made if need be); every project's for
    an admin asking for all."""
    network = _network(service)
    if all_projects:
        return _asked(network.security_groups)
    return _asked(lambda: network.security_groups(project_id=context.project_id or ""))


def get_group(service: ComputeService, context: RequestContext, group_id: str) -> dict[str, Any]:
    network = _network(service)
    found = _asked(lambda: network.security_group(group_id))
    if not _may_use(context, found):
        raise exceptions.NotFound(f"Security group {group_id} not found.")
    return found


def create_group(
    service: ComputeService, context: RequestContext, name: str, description: str
) -> dict[str, Any]:
    network = _network(service)
    return _asked(
        lambda: network.create_security_group(
            name=name, description=description, project_id=context.project_id or ""
        )
    )


def update_group(
    service: ComputeService, context: RequestContext, group_id: str, changes: Mapping[str, str]
) -> dict[str, Any]:
    get_group(service, context, group_id)
    network = _network(service)
    return _asked(lambda: network.update_security_group(group_id, **changes))


def delete_group(service: ComputeService, context: RequestContext, group_id: str) -> None:
    # The network service lets the compute service, a service, delete a default group; Nova's
    # proxy never does (no other group may be named default).
    if get_group(service, context, group_id)["name"] == "default":
        raise exceptions.BadRequest("Removing default security group not allowed.")
    network = _network(service)
    _asked(lambda: network.delete_security_group(group_id))


def _may_use(context: RequestContext, group: Mapping[str, Any]) -> bool:
    return context.is_admin or group["project_id"] == context.project_id


def groups_by_id(service: ComputeService, group_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The groups of ``group_ids`` that exist, by id (a listing per hundred ids)."""
    network = _network(service)
    found: dict[str, dict[str, Any]] = {}
    for ids in _batches(sorted(set(group_ids))):
        found.update(
            (group["id"], group)
            for group in _asked(lambda ids=ids: network.security_groups(id=ids))
        )
    return found


def _batches(ids: Sequence[str]) -> list[list[str]]:
    return [list(ids[at : at + _IDS_PER_REQUEST]) for at in range(0, len(ids), _IDS_PER_REQUEST)]


# -- rules -------------------------------------------------------------------------------------


def create_rule(
    service: ComputeService, context: RequestContext, body: Mapping[str, Any]
) -> dict[str, Any]:
    """An ingress rule from Nova's form: ``parent_group_id``, ``ip_protocol``, ``from_port``,
    ``to_port`` and ``cidr`` or ``group_id``."""
    parent = _group_id(body.get("parent_group_id"), "parent_group_id")
    remote = body.get("group_id")
    attributes: dict[str, Any] = {
        "security_group_id": parent,
        "direction": "ingress",
        "ethertype": "IPv4",
    }
    if remote is not None:
        attributes["remote_group_id"] = _group_id(remote, "group_id")
    else:
        cidr = _cidr(body.get("cidr"))
        attributes["remote_ip_prefix"] = cidr
        attributes["ethertype"] = f"IPv{ipaddress.ip_network(cidr, strict=False).version}"
    attributes.update(_protocol_and_ports(body))
    get_group(service, context, parent)
    if remote is not None:
        get_group(service, context, attributes["remote_group_id"])
    network = _network(service)
    return _asked(lambda: network.create_security_group_rule(**attributes))


def get_rule(service: ComputeService, context: RequestContext, rule_id: str) -> dict[str, Any]:
    network = _network(service)
    found = _asked(lambda: network.security_group_rule(rule_id))
    get_group(service, context, found["security_group_id"])
    return found


def delete_rule(service: ComputeService, context: RequestContext, rule_id: str) -> None:
    get_rule(service, context, rule_id)
    network = _network(service)
    _asked(lambda: network.delete_security_group_rule(rule_id))


def _group_id(value: Any, name: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise exceptions.BadRequest(f"Invalid input for field '{name}': not a UUID.") from None


def _cidr(value: Any) -> str:
    if value is None:
        return "0.0.0.0/0"
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise exceptions.BadRequest(f"Invalid CIDR {value!r}.") from None
    return str(value)


def _protocol_and_ports(body: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's checks of ``ip_protocol``, ``from_port`` and ``to_port``; ICMP's -1 is "any"."""
    protocol, low, high = body.get("ip_protocol"), body.get("from_port"), body.get("to_port")
    if protocol is None or low is None or high is None:
        raise exceptions.BadRequest("Not enough parameters to build a valid rule.")
    protocol = str(protocol).lower()
    if protocol not in _PROTOCOLS:
        raise exceptions.BadRequest(
            f"Invalid IP protocol {body['ip_protocol']}: one of {', '.join(_PROTOCOLS)}."
        )
    try:
        low, high = int(low), int(high)
    except (TypeError, ValueError):
        raise exceptions.BadRequest("To and From ports must be integers.") from None
    if protocol == "icmp":
        if not (-1 <= low <= 255 and -1 <= high <= 255):
            raise exceptions.BadRequest("For ICMP, the type:code must be valid.")
        icmp_type = None if low == -1 else low
        icmp_code = None if high == -1 or icmp_type is None else high
        return {"protocol": protocol, "port_range_min": icmp_type, "port_range_max": icmp_code}
    if low > high:
        raise exceptions.BadRequest("Former value cannot be greater than the later.")
    if low < 1 or high > 65535:
        raise exceptions.BadRequest("Valid TCP ports should be between 1-65535.")
    return {"protocol": protocol, "port_range_min": low, "port_range_max": high}


# -- a server's groups -------------------------------------------------------------------------


def of_servers(service: ComputeService, server_uuids: Sequence[str]) -> dict[str, list[str]]:
    """The names of each server's groups (those of its ports), sorted; a server without ports
    or whose ports are in no group is absent."""
    network = service.network
    if network is None or not server_uuids:
        return {}
    ports = [p for ids in _batches(server_uuids) for p in network.ports(device_id=ids)]
    groups = groups_by_id(service, [g for port in ports for g in port["security_groups"]])
    names: dict[str, set[str]] = {}
    for port in ports:
        for group_id in port["security_groups"]:
            if group_id in groups:
                names.setdefault(port["device_id"], set()).add(groups[group_id]["name"])
    return {server: sorted(found) for server, found in names.items()}


def server_groups(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """The groups of the server's ports."""
    servers.get_server(service, context, server_uuid, may_see)
    network = _network(service)
    ports = network.ports(device_id=server_uuid)
    ids = sorted({g for port in ports for g in port["security_groups"]})
    found = groups_by_id(service, ids)
    return [found[group_id] for group_id in ids if group_id in found]


def resolve(service: ComputeService, context: RequestContext, name: str) -> str:
    """The id of the group the caller's project calls ``name`` (a name, or an id); NotFound
    when there is none, Conflict when the name is several groups'."""
    network = _network(service)
    project = context.project_id or ""
    mine = _asked(lambda: network.security_groups(project_id=project))
    matching = servers.security_groups_called(mine, name)
    if len(matching) > 1:
        raise exceptions.Conflict(f"Multiple security groups named {name}; use its id.")
    if not matching:
        raise exceptions.NotFound(f"Security group {name} not found for project {project}.")
    return matching[0]


def add_to_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    name: str,
    may_see: Callable[[str], bool],
) -> None:
    """Put each port of the server in the group."""
    servers.get_server(service, context, server_uuid, may_see)
    group_id = resolve(service, context, name)
    network = _network(service)
    ports = network.ports(device_id=server_uuid)
    if not ports:
        raise exceptions.BadRequest(
            f"Server {server_uuid} has no port to put in security group {name}."
        )
    for port in ports:
        if group_id not in port["security_groups"]:
            groups = [*port["security_groups"], group_id]
            _asked(
                lambda port=port, groups=groups: network.update_port(
                    port["id"], security_groups=groups
                )
            )


def remove_from_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    name: str,
    may_see: Callable[[str], bool],
) -> None:
    """Take each port of the server out of the group; 400 when none was in it."""
    servers.get_server(service, context, server_uuid, may_see)
    group_id = resolve(service, context, name)
    network = _network(service)
    inside = [p for p in network.ports(device_id=server_uuid) if group_id in p["security_groups"]]
    if not inside:
        raise exceptions.BadRequest(
            f"Security group {name} is not associated with server {server_uuid}."
        )
    for port in inside:
        groups = [g for g in port["security_groups"] if g != group_id]
        _asked(
            lambda port=port, groups=groups: network.update_port(port["id"], security_groups=groups)
        )
