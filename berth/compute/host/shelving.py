"""What a compute host does to shelve, offload and unshelve a server (``HostAgent`` calls these).

Shelving powers the guest off, uploads its disk to the image the API made for it
(``<name>-shelved``), and keeps everything (host, allocation, bindings, virtual
functions): the server is SHELVED. Offloading destroys the guest and gives back what the server
holds because of this host: its virtual functions here, its allocation in Placement and its ports'
bindings (the ports stay the server's: ``device_id`` is kept). The server is SHELVED_OFFLOADED,
with no host and no node, and holds nothing. Unshelving a SHELVED server powers it on again; an
offloaded one comes here claimed and bound by the conductors (as a build does), and is spawned,
or handed to the cell conductor with the alternates when its spawn fails.

Every step is guarded by the task state the API set, so a message delivered twice, or one that
arrives after a delete, does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from berth.common.timeutils import utcnow
from berth.compute import actions
from berth.compute.db import instances, pci_devices
from berth.compute.host import snapshots
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.selection import Selection
from berth.compute.snapshots import delete_shelved_image

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)

# Power states as the API shows them (OS-EXT-STS:power_state).
RUNNING = 1
SHUTDOWN = 4
NOSTATE = 0


def shelve(agent: HostAgent, instance_uuid: str, offload: bool, image_id: str | None) -> None:
    """Power the guest off and upload its disk to ``image_id`` (the image the API made):
    SHELVED; with ``offload``, offloaded at once, under the same action and task state (so the
    server goes from ACTIVE to SHELVED_OFFLOADED, never showing SHELVED to a client that would
    offload it again, as ``openstack server shelve --offload`` does)."""
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != "shelving" or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, actions.SHELVE, actions.SHELVE_STEP, agent.host
        )
    agent.driver.power_off(instance_uuid)
    failure = snapshots.upload(agent, instance_uuid, image_id) if image_id else None
    if failure is not None:
        LOG.warning("server %s is shelved without its image: %s", instance_uuid, failure)
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {"power_state": SHUTDOWN} if offload else
            {"vm_state": "shelved", "task_state": None, "power_state": SHUTDOWN},
            expected_task_states=["shelving"],
        )  # fmt: skip
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
    if done and offload:
        _offload(agent, instance_uuid, actions.SHELVE, "shelving")


def shelve_offload(agent: HostAgent, instance_uuid: str) -> None:
    """Offload a SHELVED server (the API set ``shelving_offloading``)."""
    _offload(agent, instance_uuid, actions.SHELVE_OFFLOAD, "shelving_offloading")


def _offload(agent: HostAgent, instance_uuid: str, action: str, task_state: str) -> None:
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != task_state or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, action, actions.SHELVE_OFFLOAD_STEP, agent.host
        )
    # The guest and its virtual functions here; then what the other services keep for it.
    agent.driver.destroy(instance_uuid)
    with agent.db.write() as conn:
        pci_devices.release(conn, instance_uuid)
    agent.placement.release(instance_uuid)
    for entry in row["network_info"]:
        agent.network.unbind(PortEntry.from_json(entry).port_id)
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {
                "vm_state": "shelved_offloaded",
                "task_state": None,
                "power_state": NOSTATE,
                "host": None,
                "node": None,
            },
            expected_task_states=[task_state],
        )
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
    if not done:
        LOG.info("server %s changed while it was offloaded (deleted?)", instance_uuid)


def unshelve(
    agent: HostAgent,
    instance_uuid: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """Power a SHELVED server on; spawn an offloaded one that the conductors placed here."""
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != "unshelving" or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, actions.UNSHELVE, actions.UNSHELVE_STEP, agent.host
        )
    if row["vm_state"] == "shelved":
        agent.driver.power_on(instance_uuid)
    else:
        failure = agent.start_here(row)
        if failure is not None:
            with agent.db.write() as conn:
                actions.step_ended(conn, step, actions.ERROR, failure)
            agent.give_back_here(instance_uuid)
            agent.cell_conductor.unshelve_failed(
                instance_uuid, agent.host, failure, alternates, attempts
            )
            return
    with agent.db.write() as conn:
        pci_devices.allocate(conn, instance_uuid, agent.node_id)
        done = instances.update(
            conn,
            instance_uuid,
            {"vm_state": "active", "task_state": None, "power_state": RUNNING,
             "launched_at": utcnow()},
            expected_task_states=["unshelving"],
        )  # fmt: skip
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
    if not done:
        agent.lost_while_spawning(instance_uuid)
        return
    # The server runs again: the image it was shelved to is of no more use (Nova's too).
    delete_shelved_image(agent.images, instance_uuid)
