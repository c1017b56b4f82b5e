"""Evacuation on the hosts (the conductors' side is ``berth.compute.conductor.evacuate``).

The destination rebuilds the server (``evacuate_instance``): its virtual functions on the
physical functions the ports' new bindings name (the conductor bound them here, so they are
active), the spawn; the server is ACTIVE there (stopped, if it was), the migration ``done``. A
failure gives back what it took here and goes to the cell conductor with the alternates.

The failed host, when its agent starts again (``clean_up_evacuated``), finds the evacuations
from it that are ``done``: it destroys its copies of those servers, gives back their virtual
functions on its node and the allocation each migration held on it, and marks them
``completed``, as Nova's compute service does when it comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection, RowMapping

from berth.compute import actions
from berth.compute.conductor import ports
from berth.compute.conductor.evacuate import (
    COMPLETED,
    DONE,
    EVACUATE,
    PRE_MIGRATING,
    REBUILD,
    REBUILDING,
)
from berth.compute.db import instances, migrations, pci_devices
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.selection import Selection

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)

RUNNING = 1
SHUTDOWN = 4


def evacuate_instance(
    agent: HostAgent,
    instance_uuid: str,
    migration_uuid: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """Rebuild the evacuated server here; a failure goes back to the cell conductor with the
    alternates, having given back what it took here."""
    with agent.db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if (
        instance is None
        or migration is None
        or instance["task_state"] != REBUILDING
        or migration["status"] != PRE_MIGRATING
        or migration["dest_compute"] != agent.host
    ):
        LOG.info("server %s is no longer being evacuated here; nothing to do", instance_uuid)
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, EVACUATE, REBUILD, agent.host)
    failure = agent.start_here(instance)
    if failure is not None:
        with agent.db.write() as conn:
            actions.step_ended(conn, step, actions.ERROR, failure)
        agent.give_back_here(instance_uuid)
        agent.cell_conductor.evacuate_failed(
            instance_uuid, migration_uuid, agent.host, failure, alternates, attempts
        )
        return
    stopped = instance["vm_state"] == "stopped"
    if stopped:
        agent.driver.power_off(instance_uuid)
    entries = [PortEntry.from_json(entry) for entry in instance["network_info"]]
    network_info = ports.refreshed(agent.network, entries)
    with agent.db.write() as conn:
        pci_devices.allocate(conn, instance_uuid, agent.node_id)
        done = instances.update(conn, instance_uuid, {
            "host": agent.host, "node": migration["dest_node"],
            "vm_state": "stopped" if stopped else "active", "task_state": None,
            "power_state": SHUTDOWN if stopped else RUNNING,
            "network_info": [entry.to_json() for entry in network_info],
        }, expected_task_states=[REBUILDING])  # fmt: skip
        if done:
            migrations.update(conn, migration_uuid, {"status": DONE}, [PRE_MIGRATING])
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
    if not done:
        # Deleted while it was rebuilt here: this copy goes too.
        agent.give_back_here(instance_uuid)


def evacuated_from(conn: Connection) -> dict[str, list[RowMapping]]:
    """Per host, the evacuations away from it that its agent has yet to clean up after."""
    found: dict[str, list[RowMapping]] = {}
    for migration in migrations.list_migrations(
        conn, migration_type=migrations.EVACUATION, status=DONE
    ):
        found.setdefault(migration["source_compute"], []).append(migration)
    return found


def clean_up_evacuated(agent: HostAgent, evacuated: Sequence[RowMapping]) -> None:
    """Give back what the servers evacuated from this host (``evacuated_from``) hold here."""
    for migration in evacuated:
        uuid = migration["instance_uuid"]
        LOG.info("server %s was evacuated from %s: destroying the copy here", uuid, agent.host)
        agent.driver.destroy(uuid)
        with agent.db.write() as conn:
            pci_devices.release(conn, uuid, agent.node_id)
        agent.placement.release(migration["uuid"])
        with agent.db.write() as conn:
            migrations.update(conn, migration["uuid"], {"status": COMPLETED}, [DONE])
