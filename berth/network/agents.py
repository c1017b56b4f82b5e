"""Agents: the state each host's Open vSwitch or SR-IOV agent reports, and how an agent is shown.

An agent reports its state periodically (``report``): the first report of an agent type on a host
makes the agent, later ones refresh its heartbeat and configuration. An agent is alive while its
last heartbeat is at most ``agent_down_time`` seconds old. What Placement shows of a host (its
bridges' and devices' bandwidth, the physical networks they reach) is computed from the
configurations, so they are checked here and a bad one is refused with the key that is wrong:

    Open vSwitch agent: {"bridge_mappings": {"physnet1": "br-ex"},
                         "resource_provider_bandwidths": {"br-ex": {"egress": 10000, "ingress": 10000}},
                         "resource_provider_packet_processing_without_direction": 100000,
                         "tunnel_types": ["vxlan"], "supported_vnic_types": ["normal"]}
    NIC Switch agent:   {"device_mappings": {"physnet2": ["ens1f0"]},
                         "resource_provider_bandwidths": {"ens1f0": {"egress": 25000000}},
                         "num_virtual_functions": {"ens1f0": 8}}

Keys not named here are kept unchecked: agents report more than Placement needs.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.common.timeutils import utcnow
from berth.network import exceptions, validate
from berth.network.model import is_alive
from berth.network.store import agents as store

OVS = "Open vSwitch agent"
SRIOV = "NIC Switch agent"
AGENT_TYPES = (OVS, SRIOV)
DIRECTIONS = ("egress", "ingress")
# Placement's largest inventory: no configured rate may exceed it.
MAX_AMOUNT = 2**31 - 1

_UPDATE = {"admin_state_up", "description"}
_TIMESTAMP = "%Y-%m-%d %H:%M:%S"


def report(
    conn: Connection,
    agent_type: str,
    host: str,
    binary: str,
    topic: str,
    configurations: Mapping[str, Any],
    availability_zone: str | None = None,
) -> tuple[str, bool]:
    """Record an agent's state report: (its id, whether this report made it).

    A changed configuration marks the agent's resources as not yet synced with Placement."""
    now = utcnow()
    state = _state(agent_type, host, binary, topic, configurations, availability_zone, now)
    found = store.find_agent(conn, agent_type, host)
    if found is None:
        row = _first_row(agent_type, host, state, now)
        try:
            with conn.begin_nested():
                store.insert_agent(conn, row)
            return row["id"], True
        except IntegrityError:
            # The same agent's first report, made concurrently, won: this one refreshes it.
            found = store.find_agent(conn, agent_type, host)
            if found is None:
                raise
    if found["configurations"] != state["configurations"]:
        state.update(resources_synced=None, updated_at=now)
    store.update_agent(conn, found["id"], state)
    return found["id"], False


def _state(
    agent_type: str,
    host: str,
    binary: str,
    topic: str,
    configurations: Mapping[str, Any],
    availability_zone: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """What a report sets of its agent, the report checked first."""
    validate.one_of({"agent_type": agent_type}, "agent_type", AGENT_TYPES)
    if not host:
        raise exceptions.InvalidInput("Invalid input for host. Reason: it must not be empty.")
    return {
        "binary": binary,
        "topic": topic,
        "configurations": check_configurations(agent_type, configurations),
        "availability_zone": availability_zone,
        "heartbeat_at": now,
    }


def _first_row(
    agent_type: str, host: str, state: Mapping[str, Any], now: dt.datetime
) -> dict[str, Any]:
    """An agent's row as its first report makes it."""
    return {
        "id": str(uuid.uuid4()), "agent_type": agent_type, "host": host,
        "admin_state_up": True, "description": "", "resources_synced": None,
        "started_at": now, "created_at": now, **state,
    }  # fmt: skip


@dataclass(frozen=True)
class StateReport:
    """One agent's state report, as ``report`` takes it."""

    agent_type: str
    host: str
    binary: str
    topic: str
    configurations: Mapping[str, Any]


# What a report sets besides the heartbeat: an agent whose row shows all of it as reported
# gets only the heartbeat.
_REPORTED = ("binary", "topic", "configurations", "availability_zone")


def report_many(conn: Connection, reports: Sequence[StateReport]) -> list[str]:
    """``report`` for many agents at once (a fleet's agents as it starts): the agents read
    once, the new ones written in one statement, the known ones whose state is as reported
    given only a heartbeat, in one statement too. The agents' ids, in the reports' order."""
    known = {(a["agent_type"], a["host"]): a for a in store.list_agents(conn)}
    now = utcnow()
    new: list[dict[str, Any]] = []
    alive: list[str] = []
    ids: list[str] = []
    for given in reports:
        state = _state(
            given.agent_type, given.host, given.binary, given.topic, given.configurations,
            None, now,
        )  # fmt: skip
        found = known.get((given.agent_type, given.host))
        if found is None:
            new.append(_first_row(given.agent_type, given.host, state, now))
            ids.append(new[-1]["id"])
        elif all(found[key] == state[key] for key in _REPORTED):
            alive.append(found["id"])
            ids.append(found["id"])
        else:
            ids.append(_report_one(conn, given))
    try:
        with conn.begin_nested():
            store.insert_agents(conn, new)
    except IntegrityError:
        # Some reported meanwhile through the API: one by one, as each would be.
        return [_report_one(conn, given) for given in reports]
    store.heartbeat(conn, alive, now)
    return ids


def _report_one(conn: Connection, given: StateReport) -> str:
    return report(
        conn, given.agent_type, given.host, given.binary, given.topic, given.configurations
    )[0]


def check_configurations(agent_type: str, configurations: Any) -> dict[str, Any]:
    """The configurations as reported, or a 400 naming the key that is wrong."""
    if not isinstance(configurations, dict):
        raise _bad("configurations", "must be a dictionary")
    if agent_type == OVS:
        devices = _bridge_mappings(configurations)
        _packet_processing(configurations)
        _strings(configurations, "tunnel_types")
    else:
        devices = _device_mappings(configurations)
        for device, count in _of_devices(configurations, "num_virtual_functions", devices).items():
            _amount(f"num_virtual_functions.{device}", count)
    for device, rates in _of_devices(
        configurations, "resource_provider_bandwidths", devices
    ).items():
        _directed(f"resource_provider_bandwidths.{device}", rates)
    _strings(configurations, "supported_vnic_types")
    return dict(configurations)


def _bad(key: str, reason: str) -> exceptions.InvalidInput:
    return exceptions.InvalidInput(f"Invalid input for configurations. Reason: {key} {reason}.")


def _name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(key, f"has '{value}', not a non-empty string")
    return value


def _dictionary(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(key, "must be a dictionary")
    for name in value:
        _name(key, name)
    return value


def _bridge_mappings(config: Mapping[str, Any]) -> set[str]:
    """The bridges of ``{physnet: bridge}``; a bridge serves one physical network."""
    bridges: set[str] = set()
    for physnet, bridge in _dictionary(config, "bridge_mappings").items():
        if _name(f"bridge_mappings.{physnet}", bridge) in bridges:
            raise _bad(f"bridge_mappings.{physnet}", f"names bridge {bridge} a second time")
        bridges.add(bridge)
    return bridges


def _device_mappings(config: Mapping[str, Any]) -> set[str]:
    """The devices of ``{physnet: [device, ...]}``; a device serves one physical network."""
    devices: set[str] = set()
    for physnet, listed in _dictionary(config, "device_mappings").items():
        key = f"device_mappings.{physnet}"
        if not isinstance(listed, list):
            raise _bad(key, "must be a list of devices")
        for device in listed:
            if _name(key, device) in devices:
                raise _bad(key, f"names device {device} a second time")
            devices.add(device)
    return devices


def _of_devices(config: Mapping[str, Any], key: str, devices: set[str]) -> dict[str, Any]:
    """A ``{device: value}`` key, whose every device must be one the mappings name."""
    found = _dictionary(config, key)
    for device in found:
        if device not in devices:
            raise _bad(f"{key}.{device}", "names a device the mappings do not")
    return found


def _packet_processing(config: Mapping[str, Any]) -> None:
    without = config.get("resource_provider_packet_processing_without_direction")
    if without is not None:
        _amount("resource_provider_packet_processing_without_direction", without)
    key = "resource_provider_packet_processing_with_direction"
    with_direction = _directed(key, config.get(key) or {})
    if without is not None and with_direction:
        raise _bad(
            key, "cannot be given with resource_provider_packet_processing_without_direction"
        )


def _directed(key: str, rates: Any) -> dict[str, int]:
    """``{"egress": n, "ingress": n}``, either optional or null; the directions given."""
    if not isinstance(rates, dict):
        raise _bad(key, "must be a dictionary of egress and ingress")
    found = {}
    for direction, amount in rates.items():
        if direction not in DIRECTIONS:
            raise _bad(f"{key}.{direction}", "is not a direction (egress or ingress)")
        if amount is not None:
            found[direction] = _amount(f"{key}.{direction}", amount)
    return found


def _amount(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_AMOUNT:
        raise _bad(key, f"has '{value}', not an integer from 0 to {MAX_AMOUNT}")
    return value


def _strings(config: Mapping[str, Any], key: str) -> None:
    value = config.get(key)
    if value is None:
        return
    if not isinstance(value, list):
        raise _bad(key, "must be a list of strings")
    for item in value:
        _name(key, item)


# -- the operator's API -------------------------------------------------------------------------


def get_agent(conn: Connection, agent_id: str) -> RowMapping:
    found = store.get_agent(conn, agent_id)
    if found is None:
        raise exceptions.AgentNotFound(agent_id)
    return found


def update_agent(conn: Connection, agent_id: str, body: Mapping[str, Any]) -> None:
    get_agent(conn, agent_id)
    validate.known(body, _UPDATE, "agent")
    values: dict[str, Any] = {}
    if "admin_state_up" in body:
        values["admin_state_up"] = validate.boolean(body, "admin_state_up", True)
    if "description" in body:
        values["description"] = validate.string(body, "description")
    if values:
        store.update_agent(conn, agent_id, {**values, "updated_at": utcnow()})


def delete_agent(conn: Connection, agent_id: str) -> None:
    get_agent(conn, agent_id)
    store.delete_agent(conn, agent_id)


def view(row: RowMapping, now: dt.datetime, down_time: int) -> dict[str, Any]:
    """The API's view of an agent; its timestamps as the agent API gives them (no T, no Z)."""
    return {
        "id": row["id"],
        "agent_type": row["agent_type"],
        "binary": row["binary"],
        "topic": row["topic"],
        "host": row["host"],
        "admin_state_up": row["admin_state_up"],
        "alive": is_alive(row["heartbeat_at"], now, down_time),
        "heartbeat_timestamp": row["heartbeat_at"].strftime(_TIMESTAMP),
        "started_at": row["started_at"].strftime(_TIMESTAMP),
        "created_at": row["created_at"].strftime(_TIMESTAMP),
        "configurations": row["configurations"],
        "description": row["description"] or None,
        "availability_zone": row["availability_zone"],
        "resources_synced": row["resources_synced"],
        "resource_versions": {},
    }
