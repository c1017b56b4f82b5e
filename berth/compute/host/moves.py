"""Cold migrate and resize on the hosts (the conductors' side is ``berth.compute.conductor.moves``).

The destination starts the server (``finish_resize``): its virtual functions on the physical
functions the ports' new bindings name (the conductor bound them here, so they are active), the
spawn; the server waits in VERIFY_RESIZE. On a confirm the source drops its copy and the allocation the migration holds
(``confirm_resize``); on a revert the destination drops its copy (``revert_resize``) and the cell
conductor gives the source back. A resize to the same host keeps the one copy and its virtual
functions throughout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from berth.compute import actions
from berth.compute.conductor import ports
from berth.compute.conductor.move_steps import action_of
from berth.compute.db import instances, migrations, pci_devices
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.selection import Selection

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)

FINISH = "compute_finish_resize"
CONFIRM = "compute_confirm_resize"
REVERT = "compute_revert_resize"
CONFIRM_RESIZE = "confirmResize"
REVERT_RESIZE = "revertResize"
LIVE_MIGRATION = "live-migration"
PRE_LIVE = "compute_pre_live_migration"
POST_LIVE = "compute_post_live_migration"
# The task states of a server whose copy a destination starts (live; between cells).
_COPYING = ("migrating", "resize_migrating")
SHUTDOWN = 4


def finish_resize(
    agent: HostAgent,
    instance_uuid: str,
    migration_uuid: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """Start the moved server here; a failure goes back to the cell conductor with the
    alternates, having given back what it took here."""
    with agent.db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if (
        instance is None
        or migration is None
        or instance["task_state"] != "resize_migrating"
        or migration["dest_compute"] != agent.host
    ):
        LOG.info("server %s is no longer moving here; nothing to start", instance_uuid)
        return
    action = action_of(migration)
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, action, FINISH, agent.host)
    same_host = migration["source_compute"] == agent.host
    failure = agent.start_here(instance, claim_vfs=not same_host)
    if failure is not None:
        with agent.db.write() as conn:
            actions.step_ended(conn, step, actions.ERROR, failure)
        if not same_host:
            agent.give_back_here(instance_uuid)
        agent.cell_conductor.reschedule_move(
            instance_uuid, migration_uuid, agent.host, failure, alternates, attempts
        )
        return
    entries = [PortEntry.from_json(entry) for entry in instance["network_info"]]
    network_info = ports.refreshed(agent.network, entries)
    with agent.db.write() as conn:
        pci_devices.allocate(conn, instance_uuid, agent.node_id)
        done = instances.update(conn, instance_uuid, {
            "host": agent.host, "node": migration["dest_node"], "flavor": migration["new_flavor"],
            "vm_state": "resized", "task_state": None,
            "network_info": [entry.to_json() for entry in network_info],
        }, expected_task_states=["resize_migrating"])  # fmt: skip
        if done:
            migrations.update(conn, migration_uuid, {"status": "finished"}, ["migrating"])
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
    if not done and not same_host:
        # Deleted while it started here: the delete went to the source; this copy goes too.
        agent.give_back_here(instance_uuid)


def confirm_resize(agent: HostAgent, instance_uuid: str, migration_uuid: str) -> None:
    """Drop the source's copy and its allocation: the move is final."""
    with agent.db.read() as conn:
        migration = migrations.get(conn, migration_uuid)
    if migration is None or migration["status"] != "confirming":
        LOG.info("migration %s is not being confirmed; nothing to do", migration_uuid)
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, CONFIRM_RESIZE, CONFIRM, agent.host)
    if migration["dest_compute"] != agent.host:
        agent.give_back_here(instance_uuid)
    agent.placement.release(migration_uuid)
    with agent.db.write() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        stopped = instance is not None and instance["power_state"] == SHUTDOWN
        instances.update(
            conn, instance_uuid, {"vm_state": "stopped" if stopped else "active"},
            expected_vm_states=["resized"],
        )  # fmt: skip
        migrations.update(conn, migration_uuid, {"status": "confirmed"}, ["confirming"])
        actions.step_ended(conn, step, actions.SUCCESS)


def revert_resize(agent: HostAgent, instance_uuid: str, migration_uuid: str) -> None:
    """Drop the destination's copy; the cell conductor gives the source back."""
    with agent.db.read() as conn:
        migration = migrations.get(conn, migration_uuid)
    if migration is None or migration["status"] != "reverting":
        LOG.info("migration %s is not being reverted; nothing to do", migration_uuid)
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, REVERT_RESIZE, REVERT, agent.host)
    if migration["source_compute"] != agent.host:
        agent.give_back_here(instance_uuid)
    with agent.db.write() as conn:
        actions.step_ended(conn, step, actions.SUCCESS)
    agent.cell_conductor.finish_revert_resize(instance_uuid, migration_uuid)


def release_moves(agent: HostAgent, instance: Mapping[str, Any]) -> None:
    """A deleted server's moves under way end: their allocations go, and the copies and virtual
    functions the server held on the other host of each."""
    with agent.db.read() as conn:
        moving = migrations.in_progress(conn, instance["uuid"])
    if moving is None:
        return
    agent.placement.release(moving["uuid"])
    with agent.db.write() as conn:
        migrations.update(conn, moving["uuid"], {"status": "error"})
        # The copy on the other end of the move: its virtual functions, wherever they are.
        pci_devices.release(conn, instance["uuid"])


def start_copy(
    agent: HostAgent,
    instance_uuid: str,
    migration_uuid: str,
    port_allocations: Mapping[str, Mapping[str, str]],
) -> str | None:
    """Start a moving server's copy here, the destination of a live migration (while the
    source still runs it) or of a move between cells (a copy of its records is here already):
    its virtual functions on the physical functions its ports' providers here are on, the spawn.
    Why it failed (having given back what it took here), or None."""
    with agent.db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if instance is None or migration is None or instance["task_state"] not in _COPYING:
        return f"server {instance_uuid} is no longer moving here"
    live = migration["migration_type"] == migrations.LIVE_MIGRATION
    action, event = (LIVE_MIGRATION, PRE_LIVE) if live else (action_of(migration), FINISH)
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, action, event, agent.host)
    failure = agent.start_here(instance, allocations=port_allocations)
    if failure is not None:
        agent.give_back_here(instance_uuid)
    with agent.db.write() as conn:
        if failure is None:
            pci_devices.allocate(conn, instance_uuid, agent.node_id)
        actions.step_ended(conn, step, actions.ERROR if failure else actions.SUCCESS, failure)
    return failure


def post_live_migration(agent: HostAgent, instance_uuid: str, migration_uuid: str) -> None:
    """The server runs on its destination: drop the copy here (the source), its virtual
    functions and the allocation the migration holds."""
    with agent.db.read() as conn:
        migration = migrations.get(conn, migration_uuid)
    if migration is None or migration["status"] != "running":
        LOG.info("live migration %s is not running; nothing to clean up", migration_uuid)
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, LIVE_MIGRATION, POST_LIVE, agent.host)
    agent.give_back_here(instance_uuid)
    agent.placement.release(migration_uuid)
    with agent.db.write() as conn:
        migrations.update(conn, migration_uuid, {"status": "completed"}, ["running"])
        actions.step_ended(conn, step, actions.SUCCESS)
