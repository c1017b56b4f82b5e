"""Migration 0004 turns the shared flags of networks and QoS policies, and networks'
router:external, into wildcard RBAC entries, and keeps what refers to them (a policy's rules, a network naming a policy)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command

from berth.common.db import Database
from berth.network.store.migrate import MIGRATIONS

POLICY, HIDDEN, NETWORK = (f"00000000-0000-0000-0000-00000000000{i}" for i in (1, 2, 3))


def test_shared_flags_become_wildcard_entries(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'network.db'}")
    try:
        with db.engine.begin() as conn:
            command.upgrade(MIGRATIONS._config(conn), "0003")
        with db.write() as conn:
            for policy_id, shared in ((POLICY, True), (HIDDEN, False)):
                conn.execute(
                    sa.text(
                        "INSERT INTO qos_policies (id, project_id, name, description, shared, "
                        "is_default, revision_number, created_at) VALUES (:id, 'ops', '', '', "
                        ":shared, 0, 0, '2026-11-26 00:00:00')"
                    ),
                    {"id": policy_id, "shared": shared},
                )
            conn.execute(
                sa.text(
                    "INSERT INTO qos_rules (id, policy_id, rule_type, direction, min_kbps) "
                    "VALUES ('r1', :policy, 'minimum_bandwidth', 'egress', 1000)"
                ),
                {"policy": POLICY},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO networks (id, project_id, name, description, admin_state_up, "
                    "status, shared, router_external, mtu, qos_policy_id, revision_number, "
                    "created_at) VALUES (:id, 'alice', '', '', 1, 'ACTIVE', 1, 1, 1450, :policy, "
                    "0, '2026-11-26 00:00:00')"
                ),
                {"id": NETWORK, "policy": POLICY},
            )
        assert MIGRATIONS.upgrade(db) is True
        with db.read() as conn:
            entries = conn.execute(
                sa.text(
                    "SELECT project_id, object_type, object_id, action, target_project "
                    "FROM rbac_policies ORDER BY object_type, action"
                )
            ).all()
            rules = conn.execute(sa.text("SELECT policy_id FROM qos_rules")).scalars().all()
            network_policy = conn.execute(sa.text("SELECT qos_policy_id FROM networks")).scalar()
        assert [tuple(e) for e in entries] == [
            ("alice", "network", NETWORK, "access_as_external", "*"),
            ("alice", "network", NETWORK, "access_as_shared", "*"),
            ("ops", "qos_policy", POLICY, "access_as_shared", "*"),
        ]
        assert rules == [POLICY] and network_policy == POLICY
    finally:
        db.dispose()
