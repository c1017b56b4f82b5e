"""/servers/{server_id}/os-interface: a running server's ports, attached and detached.

GET lists the server's ports (as the network service has them), GET .../{port_id} shows one,
POST attaches the user's port (``port_id``) or a new port on a network (``net_id``, with at most
one ``fixed_ips`` address) and answers 200 with it once the host is done, DELETE detaches one and
answers 202. Rules: ``os_compute_api:os-attach-interfaces:list``, ``:show`` (the project's
readers), ``:create``, ``:delete`` (its members); a server the rule does not allow is a 404.
The domain is :mod:`berth.compute.interfaces`.

Microversions: 2.49 allows ``tag`` in the attach body (accepted; no version Berth serves shows
it, 2.70 would); nothing else changes up to 2.64.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute import interfaces as domain
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-attach-interfaces"
TAGGED_ATTACH = (2, 49)  # "tag" in the attach body
_TAG_LENGTH = 60


def index(req: ComputeRequest) -> Response:
    rule = f"{_RULE}:list"
    req.authorize(rule)
    ports = domain.list_ports(req.service, req.context, req.param("server_id"), _may_see(req, rule))
    return req.respond({"interfaceAttachments": [_transform_port(p) for p in ports]})


def show(req: ComputeRequest) -> Response:
    rule = f"{_RULE}:show"
    req.authorize(rule)
    port = domain.show_port(
        req.service, req.context, req.param("server_id"), req.param("port_id"), _may_see(req, rule)
    )
    return req.respond({"interfaceAttachment": _transform_port(port)})


def create(req: ComputeRequest) -> Response:
    rule = f"{_RULE}:create"
    req.authorize(rule)
    wanted = _parse(req)
    port = domain.attach(
        req.service, req.context, req.param("server_id"), wanted, _may_see(req, rule)
    )
    return req.respond({"interfaceAttachment": _transform_port(port)})


def delete(req: ComputeRequest) -> Response:
    rule = f"{_RULE}:delete"
    req.authorize(rule)
    domain.detach(
        req.service, req.context, req.param("server_id"), req.param("port_id"), _may_see(req, rule)
    )
    return req.no_content(202)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})


# -- the attach body -------------------------------------------------------------------------


def _parse(req: ComputeRequest) -> domain.Wanted:
    """``{"interfaceAttachment": {"port_id": ...}}`` or ``{"net_id": ..., "fixed_ips":
    [{"ip_address": ...}]}`` (and ``tag`` from 2.49)."""
    body = req.json_body()
    if not isinstance(body, dict) or set(body) - {"interfaceAttachment"}:
        raise _invalid("the body is an object with one key, 'interfaceAttachment'")
    attachment = body.get("interfaceAttachment", {})
    if not isinstance(attachment, dict):
        raise _invalid("'interfaceAttachment' is not an object")
    allowed = {"port_id", "net_id", "fixed_ips"}
    if req.at_least(TAGGED_ATTACH):
        allowed.add("tag")
    unknown = sorted(set(attachment) - allowed)
    if unknown:
        raise _invalid(f"additional properties are not allowed ({', '.join(unknown)})")
    port_id = _check_uuid(attachment, "port_id")
    net_id = _check_uuid(attachment, "net_id")
    fixed_ip = _check_fixed_ips(attachment.get("fixed_ips"))
    _check_tag(attachment.get("tag"))
    if port_id and net_id:
        raise exceptions.BadRequest("Must not input both network_id and port_id")
    if fixed_ip is not None and net_id is None:
        raise exceptions.BadRequest("Must input network_id when request IP address")
    if port_id is None and net_id is None:
        raise exceptions.BadRequest(
            "Give 'port_id' or 'net_id': Berth does not choose a network for an attach."
        )
    return domain.Wanted(port_id=port_id, network_id=net_id, fixed_ip=fixed_ip)


def _check_uuid(attachment: dict[str, Any], key: str) -> str | None:
    value = attachment.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid(f"'{key}' is not a string")
    try:
        uuid.UUID(value)
    except ValueError:
        raise _invalid(f"'{key}' is not a UUID: {value!r}") from None
    return value


def _check_fixed_ips(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > 1:
        raise _invalid("'fixed_ips' is a list of at most one address")
    if not value:
        return None
    (item,) = value
    if not isinstance(item, dict) or set(item) != {"ip_address"}:
        raise _invalid("an item of 'fixed_ips' is an object with one key, 'ip_address'")
    address = item["ip_address"]
    try:
        ipaddress.ip_address(address)
    except (TypeError, ValueError):
        raise _invalid(f"'ip_address' is not an IP address: {address!r}") from None
    return str(address)


def _check_tag(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value or len(value) > _TAG_LENGTH:
        raise _invalid(f"'tag' is a string of 1 to {_TAG_LENGTH} characters")
    if "/" in value or "," in value:
        raise _invalid("'tag' may contain neither '/' nor ','")


def _invalid(why: str) -> exceptions.BadRequest:
    return exceptions.BadRequest(f"Invalid input for field/attribute interfaceAttachment: {why}")


def _transform_port(port: dict[str, Any]) -> dict[str, Any]:
    """A port as an interface attachment::

    {"port_state": "ACTIVE", "port_id": "...", "net_id": "...", "mac_addr": "fa:16:3e:...",
     "fixed_ips": [{"subnet_id": "...", "ip_address": "192.0.2.5"}]}
    """
    return {
        "port_state": port["status"],
        "fixed_ips": [
            {"subnet_id": ip["subnet_id"], "ip_address": ip["ip_address"]}
            for ip in port["fixed_ips"]
        ],
        "port_id": port["id"],
        "net_id": port["network_id"],
        "mac_addr": port["mac_address"],
    }
