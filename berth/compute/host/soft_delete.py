"""A compute host's part of a deferred delete (``berth.compute.soft_delete``): power the guest
off and keep it, or power it on again. Each step is guarded by the task state the API set, so a
message delivered twice, or one that arrives after a delete, does nothing. The allocation, the
ports and their bindings and the virtual functions stay throughout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from berth.common.timeutils import utcnow
from berth.compute import actions
from berth.compute.db import instances
from berth.compute.db.instances import SOFT_DELETED
from berth.compute.db.quotas import RESTORING
from berth.compute.soft_delete import RESTORE, RESTORE_STEP, SOFT_DELETE_STEP, SOFT_DELETING

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

_RUNNING, _SHUTDOWN = 1, 4


def soft_delete(agent: HostAgent, instance_uuid: str) -> None:
    _step(
        agent, instance_uuid, SOFT_DELETING, actions.DELETE, SOFT_DELETE_STEP,
        {"vm_state": SOFT_DELETED, "power_state": _SHUTDOWN, "soft_deleted_at": utcnow()},
    )  # fmt: skip


def restore(agent: HostAgent, instance_uuid: str) -> None:
    _step(
        agent, instance_uuid, RESTORING, RESTORE, RESTORE_STEP,
        {"vm_state": "active", "power_state": _RUNNING, "soft_deleted_at": None},
    )  # fmt: skip


def _step(
    agent: HostAgent,
    instance_uuid: str,
    task_state: str,
    action: str,
    event: str,
    values: dict[str, Any],
) -> None:
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != task_state or row["host"] != agent.host:
        return
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, action, event, agent.host)
    agent.driver.set_power(instance_uuid, values["power_state"])
    with agent.db.write() as conn:
        done = instances.update(
            conn, instance_uuid, {**values, "task_state": None}, expected_task_states=[task_state]
        )
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
