"""What a compute host does to change a server's power and to rebuild it (``HostAgent`` calls
these). The API set the task state and recorded the action; each step here is guarded by that
task state, so a message delivered twice, or one that arrives after a delete or a reset, does
nothing.

A rebuild keeps everything the server holds: its host, its allocation in Placement, its ports
and their bindings, its virtual functions. The guest is destroyed and spawned again from the
image the API wrote on the instance; it ends as it was (a stopped server stays stopped, one in
ERROR becomes ACTIVE). A spawn that fails leaves it in ERROR with a fault, still holding all of
that, as Nova does: a rebuild does not reschedule.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from berth.compute import actions, power
from berth.compute.db import instances
from berth.compute.host import guest
from berth.compute.host.driver import SpawnFailed

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)

# The task state the API set (``berth.compute.rebuild``).
REBUILDING = "rebuilding"


def change_power(agent: HostAgent, instance_uuid: str, name: str) -> None:
    wanted = power.CHANGES.get(name)
    if wanted is None:
        LOG.warning("unknown power change %r for %s; ignored", name, instance_uuid)
        return
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != wanted.task_state or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, wanted.action, wanted.event, agent.host)
    agent.driver.set_power(instance_uuid, wanted.power_state)
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {"vm_state": wanted.vm_state, "task_state": None, "power_state": wanted.power_state},
            expected_task_states=[wanted.task_state],
        )
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)


def rebuild(agent: HostAgent, instance_uuid: str) -> None:
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != REBUILDING or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, actions.REBUILD, actions.REBUILD_STEP, agent.host
        )
    # The guest goes; what it holds on this host (its virtual functions) stays its own.
    agent.driver.destroy(instance_uuid)
    try:
        agent.driver.spawn(instance_uuid, guest.provisioning_from(row, row["injected"]))
    except SpawnFailed as exc:
        _failed(agent, instance_uuid, step, str(exc))
        return
    stopped = row["vm_state"] == "stopped"
    if stopped:
        agent.driver.set_power(instance_uuid, power.SHUTDOWN)
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {
                "vm_state": "stopped" if stopped else "active",
                "task_state": None,
                "power_state": power.SHUTDOWN if stopped else power.RUNNING,
                "injected": None,
            },
            expected_task_states=[REBUILDING],
        )
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)


def _failed(agent: HostAgent, instance_uuid: str, step: int | None, reason: str) -> None:
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {"vm_state": "error", "task_state": None, "power_state": power.NOSTATE},
            expected_task_states=[REBUILDING],
        )
        if done:
            instances.add_fault(conn, instance_uuid, 500, f"Rebuild failed: {reason}", reason)
        actions.step_ended(conn, step, actions.ERROR, reason)
