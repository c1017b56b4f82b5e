"""Binding ports to hosts: the decision (``binding.plan_binding``) applied to the database.

Binding runs in the caller's write transaction with the port row locked, and either changes the
port completely (host, VIF type and details, profile, a deferred address) or raises before
anything is written, so a refused binding leaves the port exactly as it was. The port row holds
the active binding; ``port_bindings`` holds inactive ones for other hosts (a server on the move)
until one is activated.

A port's status follows its active binding as upstream's L2 agent makes it: there, once a port
is bound to a host, that host's agent wires the device and reports it up (ACTIVE; down when the
port is administratively down), which is the event the compute service waits for. Berth's
simulated agents wire nothing and the binding needs a live, enabled agent on the host (else
``plan`` refuses it), so the agent's report is taken as made at once: a port bound (by an update
of ``binding:host_id``, a binding made on an unbound port, or an activation) is ACTIVE when it is
administratively up, DOWN otherwise; an unbound port is DOWN (``ports.wired_status``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.timeutils import utcnow
from berth.config import NetworkSettings
from berth.network import exceptions, ipam, ports, reporting, validate
from berth.network.binding import BindingPlan, BindingRefused, plan_binding
from berth.network.model import FixedIp, HostProvider, Port
from berth.network.store import agents as agent_store
from berth.network.store import ports as store
from berth.network.store import subnets as subnet_store

UNBOUND = "unbound"


@dataclass(frozen=True, slots=True)
class Rebound:
    """A port as its binding left it, known to the write without reading it again: its row,
    and its addresses in the order they were taken (the order a read gives them in)."""

    row: Mapping[str, Any]
    fixed_ips: tuple[FixedIp, ...]


def plan(
    conn: Connection,
    settings: NetworkSettings,
    row: Mapping[str, Any],
    host: str,
    vnic_type: str,
    profile: Mapping[str, Any],
    fixed_ips: tuple[FixedIp, ...] | None = None,
) -> BindingPlan:
    """How the port would bind on ``host``; PortBindingError (409, naming the check and the
    host) when it cannot. ``fixed_ips``: the port's addresses, when the caller has read them."""
    layout = ports.layout_of(conn, row["network_id"])
    (request,) = ports.resource_requests(conn, [{**row, "binding_vnic_type": vnic_type}]).values()  # type: ignore[list-item]
    agents = agent_store.agent_models(conn, utcnow(), settings.agent_down_time, [host])
    providers = {
        p.uuid: HostProvider(p.uuid, agent.agent_type, p.device, p.traits, frozenset(p.inventories))
        for agent in agents
        for p in reporting.agent_providers(agent)
    }
    if fixed_ips is None:
        fixed_ips = ports.fixed_ips(conn, row["id"])
    # Free addresses matter only to a port still to take its (deferred) address, and counting
    # them reads every address of the subnets: an ordinary port's binding does not.
    free = (
        {
            s.id: ipam.allocatable_count(s, subnet_store.used_addresses(conn, s.id))
            for s in layout.subnets
        }
        if row["ip_allocation"] == "deferred" and not fixed_ips
        else {}
    )
    port = Port(
        id=row["id"],
        network_id=row["network_id"],
        vnic_type=vnic_type,
        resource_request=request,
        binding_profile=profile,
        ip_allocation=row["ip_allocation"],
        fixed_ips=fixed_ips,
    )
    found = plan_binding(
        port, layout.segments, host, agents, providers, subnets=layout.subnets, free_ips=free
    )
    if isinstance(found, BindingRefused):
        raise found.as_error()
    return found


def _profile(body: Mapping[str, Any], name: str, current: Mapping[str, Any]) -> dict[str, Any]:
    if name not in body:
        return dict(current)
    return validate.mapping(body, name)


def apply_update(
    conn: Connection,
    settings: NetworkSettings,
    row: Mapping[str, Any],
    body: Mapping[str, Any],
    held: tuple[FixedIp, ...] | None = None,
) -> Rebound | None:
    """The ``binding:*`` part of a port update (a create with a host goes through here too);
    ``row`` is the port as it stands, locked, and ``held`` its addresses when the caller knows
    them. Returns the port as a binding to a host left it (None when the update bound
    nothing: the caller reads the port again)."""
    if not any(name in body for name in ("binding:host_id", "binding:profile")):
        return None
    host = body.get("binding:host_id", row["binding_host"]) or ""
    if not isinstance(host, str):
        raise exceptions.InvalidInput(
            f"Invalid input for binding:host_id. Reason: '{host}' is not a string."
        )
    profile = _profile(body, "binding:profile", row["binding_profile"])
    if not host and "binding:host_id" not in body:
        # A profile for a port not bound yet: kept for the binding to come.
        store.update(conn, row["id"], {"binding_profile": profile})
        return None
    if not host:
        unbind(conn, row)
        return None
    if row["binding_host"] and row["binding_host"] != host and row["ip_allocation"] == "deferred":
        # A deferred address belongs to the old host's segment; the new host takes its own.
        store.release_addresses(conn, row["id"])
        held = ()
    return bind(conn, settings, row, host, row["binding_vnic_type"], profile, held)


def bind(
    conn: Connection,
    settings: NetworkSettings,
    row: Mapping[str, Any],
    host: str,
    vnic_type: str,
    profile: Mapping[str, Any],
    held: tuple[FixedIp, ...] | None = None,
) -> Rebound:
    """Make ``host`` the port's active binding, taking a deferred address on the way;
    ``held``: the port's addresses, when the caller knows them."""
    if held is None:
        held = ports.fixed_ips(conn, row["id"])
    decided = plan(conn, settings, row, host, vnic_type, profile, held)
    taken = []
    for subnet_id in decided.allocate_ip_on:
        subnet = next(
            s for s in ports.layout_of(conn, row["network_id"]).subnets if s.id == subnet_id
        )
        taken.append(FixedIp(subnet.id, ports.take_lowest(conn, row["id"], subnet)))
    values = {
        "binding_host": host,
        "binding_vnic_type": vnic_type,
        "binding_profile": dict(profile),
        "binding_vif_type": decided.vif_type,
        "binding_vif_details": dict(decided.vif_details),
        "status": ports.wired_status(row["admin_state_up"]),
    }
    stamp = store.update(conn, row["id"], values)
    after = {
        **row, **values, "revision_number": row["revision_number"] + 1, "updated_at": stamp
    }  # fmt: skip
    return Rebound(after, (*held, *taken))


def unbind(conn: Connection, row: Mapping[str, Any]) -> None:
    """Forget the active binding; a deferred address goes back to its subnet."""
    if row["ip_allocation"] == "deferred":
        store.release_addresses(conn, row["id"])
    store.update(conn, row["id"], {
        "binding_host": "",
        "binding_profile": {},
        "binding_vif_type": UNBOUND,
        "binding_vif_details": {},
        "status": "DOWN",
    })  # fmt: skip


# -- the port-bindings extension ------------------------------------------------------------------


def binding_views(row: Mapping[str, Any], inactive: list[RowMapping]) -> list[dict[str, Any]]:
    found = []
    if row["binding_host"]:
        found.append({
            "host": row["binding_host"],
            "vnic_type": row["binding_vnic_type"],
            "profile": row["binding_profile"],
            "vif_type": row["binding_vif_type"],
            "vif_details": row["binding_vif_details"],
            "status": "ACTIVE",
        })  # fmt: skip
    found += [
        {
            "host": b["host"],
            "vnic_type": b["vnic_type"],
            "profile": b["profile"],
            "vif_type": b["vif_type"],
            "vif_details": b["vif_details"],
            "status": b["status"],
        }
        for b in inactive
    ]
    return found


def create_binding(
    conn: Connection, settings: NetworkSettings, row: Mapping[str, Any], body: Mapping[str, Any]
) -> None:
    """A binding for another host: active when the port has none, inactive otherwise."""
    host = validate.string(body, "host")
    validate.known(body, {"host", "vnic_type", "profile"}, "binding")
    if not host:
        raise exceptions.InvalidInput("Invalid input for host. Reason: a host is required.")
    vnic_type = validate.one_of(body, "vnic_type", ports.VNIC_TYPES, row["binding_vnic_type"])
    profile = validate.mapping(body, "profile")
    taken = {b["host"] for b in store.inactive_bindings(conn, row["id"])} | {row["binding_host"]}
    if host in taken:
        raise exceptions.PortBindingAlreadyExists(
            f"Binding for port {row['id']} on host {host} already exists."
        )
    if not row["binding_host"]:
        bind(conn, settings, row, host, vnic_type, profile)
        return
    decided = plan(conn, settings, row, host, vnic_type, profile)
    store.insert_binding(conn, {
        "port_id": row["id"],
        "host": host,
        "vnic_type": vnic_type,
        "profile": dict(profile),
        "vif_type": decided.vif_type,
        "vif_details": dict(decided.vif_details),
        "status": "INACTIVE",
    })  # fmt: skip


def activate(
    conn: Connection, settings: NetworkSettings, row: Mapping[str, Any], host: str
) -> None:
    """Make the inactive binding on ``host`` the active one (re-planned there); the active one
    becomes inactive. The binding already active: 409, as upstream's."""
    if row["binding_host"] == host:
        raise exceptions.PortBindingAlreadyActive(row["id"], host)
    waiting = {b["host"]: b for b in store.inactive_bindings(conn, row["id"])}
    if host not in waiting:
        raise exceptions.PortBindingNotFound(row["id"], host)
    binding = waiting[host]
    if row["binding_host"]:
        store.insert_binding(conn, {
            "port_id": row["id"],
            "host": row["binding_host"],
            "vnic_type": row["binding_vnic_type"],
            "profile": row["binding_profile"],
            "vif_type": row["binding_vif_type"],
            "vif_details": row["binding_vif_details"],
            "status": "INACTIVE",
        })  # fmt: skip
    store.delete_binding(conn, row["id"], host)
    bind(conn, settings, row, host, binding["vnic_type"], binding["profile"])


def delete_binding(conn: Connection, row: Mapping[str, Any], host: str) -> None:
    if row["binding_host"] == host:
        unbind(conn, row)
        return
    if host not in {b["host"] for b in store.inactive_bindings(conn, row["id"])}:
        raise exceptions.PortBindingNotFound(row["id"], host)
    store.delete_binding(conn, row["id"], host)
