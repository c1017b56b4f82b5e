"""Servers as the API shows them, whether still a BuildRequest or an Instance in a cell.

A :class:`Server` is the one shape both become (:func:`from_build_request`,
:func:`from_instance`); :func:`summary` and :func:`detail` turn it into the API's JSON for one
caller (a :class:`Viewer`: where the API is served, whether the caller is an admin, which
microversion shape of the flavor to show).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import RowMapping

# An Instance's vm_state as the API's status; a few task states of an active server show instead.
_STATUS = {
    "building": "BUILD",
    "active": "ACTIVE",
    "stopped": "SHUTOFF",
    "error": "ERROR",
    "deleted": "DELETED",
    "paused": "PAUSED",
    "suspended": "SUSPENDED",
    "rescued": "RESCUE",
    "resized": "VERIFY_RESIZE",
    "shelved": "SHELVED",
    "shelved_offloaded": "SHELVED_OFFLOADED",
    "soft-delete": "SOFT_DELETED",
}
_ACTIVE_TASK_STATUS = {
    "rebooting": "REBOOT",
    "rebuilding": "REBUILD",
    "migrating": "MIGRATING",
    "resize_prep": "RESIZE",
    "resize_migrating": "RESIZE",
    "resize_migrated": "RESIZE",
    "resize_finish": "RESIZE",
}
# A stopped server that moves shows RESIZE too, as upstream's.
_MOVING = frozenset(task for task, status in _ACTIVE_TASK_STATUS.items() if status == "RESIZE")
# Whatever the vm_state, these tasks show (a stopped or failed server being rebuilt, a server
# being hard rebooted out of any state).
_ANY_STATE_TASK_STATUS = {"rebuilding": "REBUILD", "rebooting_hard": "HARD_REBOOT"}
STATUSES = (
    frozenset(_STATUS.values())
    | frozenset(_ACTIVE_TASK_STATUS.values())
    | frozenset(_ANY_STATE_TASK_STATUS.values())
    | {"REVERT_RESIZE"}
)
# Statuses in which a server shows its progress, as upstream's.
_PROGRESS_STATUSES = frozenset(
    {"ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING"}
)
# What a server's detail shows that the answers to an update and a rebuild leave out, as
# upstream's (their schemas allow nothing more).
_DETAIL_ONLY_PREFIXES = ("OS-EXT-", "OS-SRV-USG:", "os-extended-volumes:")
_DETAIL_ONLY = frozenset({"key_name", "security_groups", "config_drive", "host_status"})


@dataclass(frozen=True)
class Server:
    uuid: str
    project_id: str
    user_id: str
    name: str
    vm_state: str
    task_state: str | None
    power_state: int
    # The flavor as the BuildRequest holds it: id, name, vcpus, memory_mb, root_gb,
    # ephemeral_gb, swap, extra_specs.
    flavor: Mapping[str, Any]
    image_id: str
    created_at: dt.datetime
    updated_at: dt.datetime | None
    # Creation order among servers made in the same second (the InstanceMapping's id).
    order: int
    host: str | None = None
    node: str | None = None
    instance_id: int | None = None
    availability_zone: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    key_name: str | None = None
    network_info: list[Mapping[str, Any]] = field(default_factory=list)
    fault: RowMapping | None = None
    launched_at: dt.datetime | None = None
    locked: bool = False
    description: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    reservation_id: str | None = None
    auto_disk_config: bool = False
    config_drive: str = ""
    user_data: str | None = None
    # The names of the security groups of its ports (the API reads them from the network).
    security_groups: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return status_of(self.vm_state, self.task_state)

    @property
    def flavor_id(self) -> str:
        return str(self.flavor.get("id", ""))


# The status of every server that is still a BuildRequest.
BUILD = "BUILD"


def status_of(vm_state: str, task_state: str | None) -> str:
    """The API's status of a server in these states (a listing filters on it before it builds
    a view)."""
    if task_state in _ANY_STATE_TASK_STATUS and vm_state != "deleted":
        return _ANY_STATE_TASK_STATUS[task_state]
    if vm_state == "active" and task_state in _ACTIVE_TASK_STATUS:
        return _ACTIVE_TASK_STATUS[task_state]
    if vm_state == "stopped" and task_state in _MOVING:
        return "RESIZE"
    if vm_state == "resized" and task_state == "resize_reverting":
        return "REVERT_RESIZE"
    return _STATUS.get(vm_state, "UNKNOWN")


def vm_states_of(statuses: Collection[str]) -> frozenset[str] | None:
    """The vm_states a server must be in to show one of ``statuses`` (``status_of``), for a
    listing to ask the database for those rows alone; None when any vm_state may (a task that
    shows whatever the vm_state, an unknown status)."""
    found: set[str] = set()
    for status in statuses:
        if status == "UNKNOWN" or status in _ANY_STATE_TASK_STATUS.values():
            return None
        found |= {vm_state for vm_state, shown in _STATUS.items() if shown == status}
        if status in _ACTIVE_TASK_STATUS.values():
            found.add("active")
        if status == "RESIZE":
            found.add("stopped")
        if status == "REVERT_RESIZE":
            found.add("resized")
    return frozenset(found)


def from_build_request(row: RowMapping, order: int) -> Server:
    instance = row["instance"]
    return Server(
        uuid=row["instance_uuid"],
        project_id=row["project_id"],
        user_id=row["user_id"],
        name=instance["name"],
        vm_state="building",
        task_state="scheduling",
        power_state=0,
        flavor=instance["flavor"],
        image_id=instance["image"]["id"],
        created_at=row["created_at"],
        updated_at=None,
        order=order,
        availability_zone=instance.get("availability_zone"),
        metadata=instance.get("metadata") or {},
        tags=tuple(instance.get("tags") or ()),
        key_name=instance.get("key_name"),
        description=instance.get("description"),
        access_ip_v4=instance.get("access_ip_v4"),
        access_ip_v6=instance.get("access_ip_v6"),
        reservation_id=instance.get("reservation_id"),
        auto_disk_config=bool(instance.get("auto_disk_config")),
        config_drive="True" if instance.get("config_drive") else "",
        user_data=instance.get("user_data"),
    )


def from_instance(
    row: Mapping[str, Any], order: int, fault: RowMapping | None = None, zone: str | None = None
) -> Server:
    """``zone``: the zone of the instance's host, shown when the instance names none."""
    return Server(
        uuid=row["uuid"],
        project_id=row["project_id"],
        user_id=row["user_id"],
        name=row["display_name"],
        vm_state=row["vm_state"],
        task_state=row["task_state"],
        power_state=row["power_state"],
        flavor=row["flavor"],
        image_id=row["image_ref"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        order=order,
        host=row["host"],
        node=row["node"],
        instance_id=row["id"],
        availability_zone=row["availability_zone"] or zone,
        metadata=row["metadata"] or {},
        tags=tuple(row["tags"] or ()),
        key_name=row["key_name"],
        network_info=list(row["network_info"] or []),
        fault=fault,
        launched_at=row["launched_at"],
        locked=row["locked"],
        description=row["description"],
        access_ip_v4=row["access_ip_v4"],
        access_ip_v6=row["access_ip_v6"],
        reservation_id=row["reservation_id"],
        auto_disk_config=row["auto_disk_config"],
        config_drive=row["config_drive"] or "",
        user_data=row["user_data"],
    )


@dataclass(frozen=True)
class Viewer:
    base_url: str
    is_admin: bool
    # 2.47: the flavor's values instead of a link to it.
    flavor_values: bool = False
    # 2.9: whether the server is locked.
    shows_locked: bool = False
    # 2.19: the server's description.
    shows_description: bool = False
    # 2.63: the image certificates the server trusts (Berth keeps none: null).
    shows_trusted_certs: bool = False
    # 2.26: the server's tags.
    shows_tags: bool = False
    # 2.3: more host attributes to an admin (of them Berth keeps the reservation id).
    shows_reservation: bool = False


def links(base_url: str, kind: str, ident: str) -> list[dict[str, str]]:
    return [
        {"rel": "self", "href": f"{base_url}/v2.1/{kind}/{ident}"},
        {"rel": "bookmark", "href": f"{base_url}/{kind}/{ident}"},
    ]


def summary(server: Server, viewer: Viewer) -> dict[str, Any]:
    """``{"id": ..., "name": ..., "links": [...]}``"""
    return {
        "id": server.uuid,
        "name": server.name,
        "links": links(viewer.base_url, "servers", server.uuid),
    }


def detail(server: Server, viewer: Viewer) -> dict[str, Any]:
    """Everything a server shows; the ``OS-EXT-SRV-ATTR:*`` fields and a fault's details to an
    admin only."""
    view: dict[str, Any] = {
        "id": server.uuid,
        "name": server.name,
        "status": server.status,
        "tenant_id": server.project_id,
        "user_id": server.user_id,
        "created": server.created_at,
        "updated": server.updated_at or server.created_at,
        "flavor": _flavor(server.flavor, viewer),
        "image": _image(server.image_id, viewer.base_url),
        "addresses": addresses(server.network_info),
        "metadata": dict(server.metadata),
        "key_name": server.key_name,
        "hostId": host_id(server.project_id, server.host),
        "accessIPv4": server.access_ip_v4 or "",
        "accessIPv6": server.access_ip_v6 or "",
        "config_drive": server.config_drive,
        "OS-DCF:diskConfig": disk_config(server.auto_disk_config),
        "OS-EXT-AZ:availability_zone": server.availability_zone or "",
        "OS-EXT-STS:vm_state": server.vm_state,
        "OS-EXT-STS:task_state": server.task_state,
        "OS-EXT-STS:power_state": server.power_state,
        "OS-SRV-USG:launched_at": server.launched_at,
        "OS-SRV-USG:terminated_at": None,
        "os-extended-volumes:volumes_attached": [],
        "links": links(viewer.base_url, "servers", server.uuid),
    }
    # As Nova's: absent when the server's ports are in no group.
    if server.security_groups:
        view["security_groups"] = [{"name": name} for name in server.security_groups]
    if server.status in _PROGRESS_STATUSES:
        view["progress"] = 0
    if viewer.shows_locked:
        view["locked"] = server.locked
    if viewer.shows_description:
        view["description"] = server.description
    if viewer.shows_trusted_certs:
        view["trusted_image_certificates"] = None
    if viewer.is_admin:
        view["OS-EXT-SRV-ATTR:host"] = server.host
        view["OS-EXT-SRV-ATTR:hypervisor_hostname"] = server.node
        view["OS-EXT-SRV-ATTR:instance_name"] = (
            f"instance-{server.instance_id:08x}" if server.instance_id is not None else ""
        )
        if viewer.shows_reservation:
            view["OS-EXT-SRV-ATTR:reservation_id"] = server.reservation_id
            view["OS-EXT-SRV-ATTR:user_data"] = server.user_data
    if viewer.shows_tags:
        view["tags"] = list(server.tags)
    if server.fault is not None and server.status in ("ERROR", "DELETED"):
        view["fault"] = _fault(server.fault, viewer.is_admin)
    return view


def changed(server: Server, viewer: Viewer) -> dict[str, Any]:
    """The answer to an update: the detail without the extended attributes (key name, zone,
    task and power states, host, launch times, volumes, security groups, the addresses' type
    and MAC), as upstream's."""
    view = {
        key: value
        for key, value in detail(server, viewer).items()
        if key not in _DETAIL_ONLY and not key.startswith(_DETAIL_ONLY_PREFIXES)
    }
    view["addresses"] = {
        network: [{"addr": entry["addr"], "version": entry["version"]} for entry in entries]
        for network, entries in view["addresses"].items()
    }
    return view


def rebuilt(
    server: Server,
    viewer: Viewer,
    admin_pass: str,
    key_name: bool = False,
    user_data: bool = False,
) -> dict[str, Any]:
    """The answer to a rebuild: :func:`changed`, the new ``adminPass``, from 2.54 ``key_name``
    and from 2.57 ``user_data``."""
    view = changed(server, viewer)
    view["adminPass"] = admin_pass
    if key_name:
        view["key_name"] = server.key_name
    if user_data:
        view["user_data"] = server.user_data
    return view


def disk_config(auto: bool) -> str:
    """OS-DCF:diskConfig: AUTO when the guest grows its root partition to the disk."""
    return "AUTO" if auto else "MANUAL"


def _flavor(flavor: Mapping[str, Any], viewer: Viewer) -> dict[str, Any]:
    """Before 2.47 ``{"id": "1", "links": [...]}``; from 2.47 ``{"vcpus": 1, "ram": 512,
    "disk": 1, "ephemeral": 0, "swap": 0, "original_name": "m1.tiny", "extra_specs": {}}``."""
    if not viewer.flavor_values:
        flavorid = str(flavor.get("id", ""))
        return {
            "id": flavorid,
            "links": [{"rel": "bookmark", "href": f"{viewer.base_url}/flavors/{flavorid}"}],
        }
    return {
        "vcpus": flavor.get("vcpus", 0),
        "ram": flavor.get("memory_mb", 0),
        "disk": flavor.get("root_gb", 0),
        "ephemeral": flavor.get("ephemeral_gb", 0),
        "swap": flavor.get("swap", flavor.get("swap_mb", 0)),
        "original_name": flavor.get("name", ""),
        "extra_specs": dict(flavor.get("extra_specs") or {}),
    }


def _image(image_id: str, base_url: str) -> dict[str, Any] | str:
    """``{"id": ..., "links": [...]}``, or ``""`` for a server with no image."""
    if not image_id:
        return ""
    return {"id": image_id, "links": [{"rel": "bookmark", "href": f"{base_url}/images/{image_id}"}]}


def addresses(network_info: list[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``{"private": [{"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed",
    "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:..."}]}``, from the instance's network_info."""
    found: dict[str, list[dict[str, Any]]] = {}
    for port in network_info:
        name = str(port.get("network_name") or port.get("network_id") or "")
        entries = found.setdefault(name, [])
        for fixed in port.get("fixed_ips") or ():
            address = str(fixed["ip_address"])
            entries.append(
                {
                    "addr": address,
                    "version": ipaddress.ip_address(address).version,
                    "OS-EXT-IPS:type": "fixed",
                    "OS-EXT-IPS-MAC:mac_addr": port.get("mac_address"),
                }
            )
    return found


def host_id(project_id: str, host: str | None) -> str:
    """An opaque id of the host, the same for one project's servers on one host, different
    across projects (so a user learns co-location, not host names)."""
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()


def _fault(fault: RowMapping, is_admin: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "code": fault["code"],
        "message": fault["message"],
        "created": fault["created_at"],
    }
    if is_admin:
        view["details"] = fault["details"]
    return view


def created(
    server_uuid: str,
    admin_pass: str,
    base_url: str,
    auto_disk_config: bool = False,
    security_groups: Sequence[str] = (),
) -> dict[str, Any]:
    """The answer to a create: ``{"id", "links", "OS-DCF:diskConfig", "security_groups",
    "adminPass"}``; the groups asked for (``default`` when none was)."""
    return {
        "id": server_uuid,
        "links": links(base_url, "servers", server_uuid),
        "OS-DCF:diskConfig": disk_config(auto_disk_config),
        "security_groups": [{"name": name} for name in security_groups or ("default",)],
        "adminPass": admin_pass,
    }
