"""A fleet's agents reported at once (``agents.report_many``) end as reported one by one."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.network import agents, exceptions
from berth.network.store import agents as store

OVS = {"bridge_mappings": {"physnet1": "br-ex"}, "supported_vnic_types": ["normal"]}
SRIOV = {"device_mappings": {"physnet2": ["ens1f0"]}}
# Kept as they are: only what a report sets is compared.
STATE = ("agent_type", "host", "binary", "topic", "configurations", "availability_zone")


def _reports(changed: str) -> list[agents.StateReport]:
    return [
        agents.StateReport(agents.OVS, "host-1", "neutron-openvswitch-agent", "N/A", OVS),
        agents.StateReport(agents.SRIOV, "host-1", "neutron-sriov-nic-agent", "N/A", SRIOV),
        agents.StateReport(agents.OVS, "host-2", "neutron-openvswitch-agent", "N/A", OVS),
        agents.StateReport(agents.OVS, changed, "neutron-openvswitch-agent", "N/A", {}),
    ]


def _before(db: Database) -> None:
    """Agents that reported earlier: host-1's OVS as now, host-3's OVS with another
    configuration (its resources synced), host-2's in another zone."""
    with db.write() as conn:
        agents.report(conn, agents.OVS, "host-1", "neutron-openvswitch-agent", "N/A", OVS)
        agents.report(conn, agents.OVS, "host-3", "neutron-openvswitch-agent", "N/A", OVS)
        agents.report(conn, agents.OVS, "host-2", "neutron-openvswitch-agent", "N/A", OVS, "zone-b")
        synced = {a["host"]: a["id"] for a in store.list_agents(conn)}["host-3"]
        store.update_agent(conn, synced, {"resources_synced": True})


def _state(conn: Connection) -> list[dict[str, Any]]:
    rows = store.list_agents(conn)
    return sorted(
        ({key: row[key] for key in (*STATE, "resources_synced")} for row in rows),
        key=lambda row: (row["host"], row["agent_type"]),
    )


def test_reported_at_once_as_one_by_one(network_db: Database) -> None:
    _before(network_db)
    reports = _reports("host-3")
    with network_db.write() as conn:
        before = {(a["agent_type"], a["host"]): a for a in store.list_agents(conn)}
        one_by_one = conn.begin_nested()
        for r in reports:
            agents.report(conn, r.agent_type, r.host, r.binary, r.topic, r.configurations)
        expected = _state(conn)
        one_by_one.rollback()
        ids = agents.report_many(conn, reports)
        assert _state(conn) == expected
        after = {(a["agent_type"], a["host"]): a for a in store.list_agents(conn)}
    assert ids == [after[(r.agent_type, r.host)]["id"] for r in reports]
    # Known agents keep their ids; each report gave its agent a heartbeat.
    assert all(after[key]["id"] == row["id"] for key, row in before.items())
    assert all(after[key]["heartbeat_at"] >= row["heartbeat_at"] for key, row in before.items())
    by_key = {(row["agent_type"], row["host"]): row for row in expected}
    assert len(expected) == 4
    # A changed configuration is to be synced with Placement again; another zone is reset.
    assert by_key[(agents.OVS, "host-3")]["configurations"] == {}
    assert by_key[(agents.OVS, "host-3")]["resources_synced"] is None
    assert by_key[(agents.OVS, "host-2")]["availability_zone"] is None
    assert by_key[(agents.SRIOV, "host-1")]["configurations"] == SRIOV


def test_a_bad_report_among_many_is_refused_and_writes_nothing(network_db: Database) -> None:
    bad = agents.StateReport(agents.OVS, "host-9", "neutron-openvswitch-agent", "N/A", [])
    with (
        pytest.raises(exceptions.InvalidInput, match="configurations"),
        network_db.write() as conn,
    ):
        agents.report_many(conn, [*_reports("host-3"), bad])
    with network_db.read() as conn:
        assert _state(conn) == []
