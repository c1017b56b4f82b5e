"""The compute host agent of one hypervisor.

It reports its compute node: a row in its cell's database and a provider in Placement (VCPU,
MEMORY_MB, DISK_GB with the configured ratios and reservations, capability traits, and the
SR-IOV physical functions' virtual functions as PCI devices). It never writes allocations: the
scheduler and the conductors do. It builds what the conductors send it: claims virtual functions
on the physical function the allocation names, spawns through its driver and sets the server
ACTIVE (the ports, bound here by the conductor, are ACTIVE already: the network agents wire them
as they are bound); on a failure it gives back what it took on this host and hands the build to
its cell conductor with the remaining alternates.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute import actions, cleanup
from berth.compute.audit_periods import Period
from berth.compute.clients.image import ImageClient
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import NodeProvider, PlacementClient
from berth.compute.db import instances, pci_devices, services
from berth.compute.host import (
    diagnostics,
    evacuate,
    events,
    guest,
    guest_actions,
    interfaces,
    moves,
    power,
    registration,
    shelving,
    snapshots,
    soft_delete,
)
from berth.compute.host.driver import SimulatedDriver, SpawnFailed
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.guest import GuestView
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellConductorAPI

LOG = logging.getLogger(__name__)

SRIOV_VNIC_TYPES = ("direct", "macvtap", "direct-physical")


@dataclass(frozen=True)
class HostResources:
    """What an operator says the host has (a simulated host's whole description)."""

    vcpus: int
    memory_mb: int
    disk_gb: int
    cpu_allocation_ratio: float = 4.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    reserved_host_memory_mb: int = 512
    reserved_host_disk_mb: int = 0
    traits: tuple[str, ...] = ()
    # Physical function name -> {"address", "physical_network", "vfs"}.
    pci: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class HostAgent:
    def __init__(
        self,
        host: str,
        resources: HostResources,
        db: Database,
        placement: PlacementClient,
        network: NetworkClient,
        driver: SimulatedDriver,
        cell_conductor: CellConductorAPI,
        images: ImageClient | None = None,
    ) -> None:
        self.host = host
        self.resources = resources
        self.db = db
        self.placement = placement
        self.network = network
        self.driver = driver
        self.cell_conductor = cell_conductor
        # Where snapshots are uploaded; a host without one cannot snapshot (tests of hosts alone).
        self.images = images
        self.node_uuid = ""
        self.node_id = 0
        self.service_id = 0
        # The last usage audit period this host recorded (``usage_audit``).
        self.audited_period: Period | None = None

    # -- reporting -------------------------------------------------------------------------------

    def start(self) -> str:
        """Register the service and the compute node, and report them to Placement (see
        ``registration.start_hosts``, which starts many hosts at once)."""
        registration.start_hosts([self])
        return self.node_uuid

    def node_values(self) -> dict[str, Any]:
        """What the host's compute node row says of its hypervisor."""
        r = self.resources
        return {
            "hypervisor_type": "simulated",
            "vcpus": r.vcpus, "memory_mb": r.memory_mb, "local_gb": r.disk_gb,
            "cpu_allocation_ratio": r.cpu_allocation_ratio,
            "ram_allocation_ratio": r.ram_allocation_ratio,
            "disk_allocation_ratio": r.disk_allocation_ratio,
            "reserved_host_memory_mb": r.reserved_host_memory_mb,
            "reserved_host_disk_mb": r.reserved_host_disk_mb,
        }  # fmt: skip

    def registered(self, service_id: int, node: Mapping[str, Any]) -> None:
        """The host's service and compute node are in its cell's database."""
        self.service_id, self.node_id, self.node_uuid = service_id, node["id"], node["uuid"]

    def provider(self) -> NodeProvider:
        """What this host reports of its compute node to Placement."""
        traits = frozenset(self.resources.traits) | {"COMPUTE_NODE"}
        return NodeProvider(self.node_uuid, self.host, self.inventories(), traits)

    def inventories(self) -> dict[str, dict[str, Any]]:
        r = self.resources
        return {
            "VCPU": _inventory(r.vcpus, 0, r.cpu_allocation_ratio),
            "MEMORY_MB": _inventory(r.memory_mb, r.reserved_host_memory_mb, r.ram_allocation_ratio),
            "DISK_GB": _inventory(
                r.disk_gb, -(-r.reserved_host_disk_mb // 1024), r.disk_allocation_ratio
            ),
        }

    # -- building ----------------------------------------------------------------------------------

    def build_and_run_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        """Spawn a server the conductors claimed and bound here; on failure hand it back."""
        # Read in the transaction that records the step: one transaction less per build.
        with self.db.write() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
            if instance is None or instance["task_state"] == "deleting":
                return
            step = actions.step_started(
                conn, instance_uuid, actions.CREATE, actions.BUILD, self.host
            )
        failure = self.start_here(instance)
        if failure is not None:
            with self.db.write() as conn:
                actions.step_ended(conn, step, actions.ERROR, failure)
            self.give_back_here(instance_uuid)
            self.cell_conductor.reschedule(instance_uuid, self.host, failure, alternates, attempts)
            return
        with self.db.write() as conn:
            if _sriov_ports(instance):
                # Only an SR-IOV port's VF is claimed (``_claim_vfs``): none to allocate else.
                pci_devices.allocate(conn, instance_uuid, self.node_id)
            done = instances.update(
                conn,
                instance_uuid,
                {
                    "vm_state": "active",
                    "task_state": None,
                    "power_state": 1,
                    "launched_at": utcnow(),
                    # The guest has its password and files: they are kept nowhere else.
                    "injected": None,
                },
                expected_task_states=["spawning"],
            )
            actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
        if not done:
            self.lost_while_spawning(instance_uuid)

    def start_here(
        self,
        instance: Mapping[str, Any],
        claim_vfs: bool = True,
        allocations: Mapping[str, Mapping[str, str]] | None = None,
    ) -> str | None:
        """Claim the server's virtual functions here (unless it holds them already) and spawn
        it; why it failed, or None when it runs. A failure leaves what it took here to be given
        back by the caller (``give_back_here``). ``allocations`` (port -> group -> provider)
        name the ports' providers here when their active bindings are elsewhere still."""
        try:
            if claim_vfs:
                self._claim_vfs(instance, allocations)
            self.driver.spawn(
                instance["uuid"], guest.provisioning_from(instance, instance.get("injected"))
            )
        except (SpawnFailed, _NoFreeVf) as exc:
            return str(exc)
        return None

    def lost_while_spawning(self, instance_uuid: str) -> None:
        """The server changed under the spawn: deleted (finish the delete), or ended in ERROR by
        the recovery, which gave back everything but what this host holds."""
        with self.db.read() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
        if instance is not None and instance["vm_state"] == "error":
            self.give_back_here(instance_uuid)
            return
        self.terminate_instance(instance_uuid)

    def _claim_vfs(
        self,
        instance: Mapping[str, Any],
        allocations: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        """One virtual function per SR-IOV port, on the physical function that holds the port's
        bandwidth (the provider ``allocations`` or else its binding profile names), else on any
        with one free."""
        for entry in _sriov_ports(instance):
            if allocations is not None:
                providers = list(allocations.get(entry.port_id, {}).values())
            else:
                port = self.network.port(entry.port_id)
                providers = list((port.get("binding:profile") or {}).get("allocation", {}).values())
            pf = self._pf_of(providers)
            with self.db.write() as conn:
                names = [pf] if pf else list(pci_devices.free_vfs(conn, self.node_id))
                if not any(
                    pci_devices.claim_vfs(conn, self.node_id, name, 1, instance["uuid"])
                    for name in names
                ):
                    raise _NoFreeVf(
                        f"no free virtual function on {pf or 'any physical function'} of {self.host}"
                    )

    def _pf_of(self, providers: list[str]) -> str | None:
        """The physical function named by one of the providers (``<host>:NIC Switch agent:<pf>``)."""
        prefix = f"{self.host}:NIC Switch agent:"
        for uuid in providers:
            found = self.placement.provider(uuid)
            if found and found["name"].startswith(prefix):
                return str(found["name"][len(prefix) :])
        return None

    # -- interfaces (``interfaces``) --------------------------------------------------------------

    def attach_interface(
        self,
        instance_uuid: str,
        port_id: str | None,
        network_id: str | None,
        fixed_ip: str | None,
    ) -> PortEntry:
        return interfaces.attach(self._here(), instance_uuid, port_id, network_id, fixed_ip)

    def detach_interface(self, instance_uuid: str, port_id: str) -> None:
        interfaces.detach(self._here(), instance_uuid, port_id)

    def _here(self) -> interfaces.Host:
        return interfaces.Host(
            self.host, self.node_id, self.node_uuid, self.db, self.placement, self.network,
            self._pf_of, SRIOV_VNIC_TYPES,
        )  # fmt: skip

    def give_back_here(self, instance_uuid: str) -> None:
        self.driver.destroy(instance_uuid)
        with self.db.write() as conn:
            pci_devices.release(conn, instance_uuid, self.node_id)

    def terminate_instance(self, instance_uuid: str) -> None:
        """Delete the server: everything it held, here and in the other services."""
        with self.db.read() as conn:
            instance = instances.get(conn, instance_uuid)
        if instance is None:
            return
        with self.db.write() as conn:
            step = actions.step_started(
                conn, instance_uuid, actions.DELETE, actions.TERMINATE, self.host
            )
        self.give_back_here(instance_uuid)
        moves.release_moves(self, instance)
        cleanup.release_server(
            self.placement,
            self.network,
            instance_uuid,
            [PortEntry.from_json(entry) for entry in instance["network_info"]],
        )
        with self.db.write() as conn:
            instances.mark_deleted(conn, instance_uuid)
            actions.step_ended(conn, step, actions.SUCCESS)

    # -- moves (``moves``) -------------------------------------------------------------------------

    def finish_resize(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        moves.finish_resize(self, instance_uuid, migration_uuid, alternates, attempts)

    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        moves.confirm_resize(self, instance_uuid, migration_uuid)

    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        moves.revert_resize(self, instance_uuid, migration_uuid)

    def start_copy(
        self,
        instance_uuid: str,
        migration_uuid: str,
        port_allocations: Mapping[str, Mapping[str, str]],
    ) -> str | None:
        return moves.start_copy(self, instance_uuid, migration_uuid, port_allocations)

    def drop_copy(self, instance_uuid: str) -> None:
        self.give_back_here(instance_uuid)

    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        moves.post_live_migration(self, instance_uuid, migration_uuid)

    # -- shelving (``shelving``) -----------------------------------------------------------------

    def shelve_instance(self, instance_uuid: str, offload: bool, image_id: str | None) -> None:
        shelving.shelve(self, instance_uuid, offload, image_id)

    def snapshot_instance(self, instance_uuid: str, image_id: str, rotation: int | None) -> None:
        snapshots.snapshot(self, instance_uuid, image_id, rotation)

    def shelve_offload_instance(self, instance_uuid: str) -> None:
        shelving.shelve_offload(self, instance_uuid)

    def unshelve_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        shelving.unshelve(self, instance_uuid, alternates, attempts)

    # -- server actions (``power``) -------------------------------------------------------------

    def change_power(self, instance_uuid: str, change: str) -> None:
        power.change_power(self, instance_uuid, change)

    def rebuild_instance(self, instance_uuid: str) -> None:
        power.rebuild(self, instance_uuid)

    # -- what operators and other services ask (``diagnostics``, ``events``, ``soft_delete``) ----

    def get_diagnostics(self, instance_uuid: str) -> GuestView | None:
        with self.db.read() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
        if instance is None or instance["host"] != self.host:
            return None
        return diagnostics.guest_view(self.driver, instance)

    def external_instance_event(self, instance_uuid: str, name: str, tag: str | None) -> None:
        events.handle(self, instance_uuid, name, tag)

    def soft_delete_instance(self, instance_uuid: str) -> None:
        soft_delete.soft_delete(self, instance_uuid)

    def restore_instance(self, instance_uuid: str) -> None:
        soft_delete.restore(self, instance_uuid)

    # -- the guest (``guest_actions``) ----------------------------------------------------------

    def rescue_instance(self, instance_uuid: str, image_ref: str, admin_pass: str) -> None:
        guest_actions.rescue(self, instance_uuid, image_ref, admin_pass)

    def unrescue_instance(self, instance_uuid: str) -> None:
        guest_actions.unrescue(self, instance_uuid)

    def set_admin_password(self, instance_uuid: str, admin_pass: str) -> None:
        guest_actions.set_admin_password(self, instance_uuid, admin_pass)

    def get_console_output(self, instance_uuid: str) -> str:
        return guest_actions.console_output(self, instance_uuid)

    # -- evacuation (``evacuate``) ----------------------------------------------------------------

    def evacuate_instance(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        evacuate.evacuate_instance(self, instance_uuid, migration_uuid, alternates, attempts)


def beat(agents: Iterable[HostAgent], now: dt.datetime) -> None:
    """Every agent's heartbeat, one transaction per cell: a thousand hosts' heartbeats as a
    thousand write transactions would queue behind the builds and let hosts look down."""
    by_db: dict[int, tuple[Database, list[HostAgent]]] = {}
    for agent in agents:
        by_db.setdefault(id(agent.db), (agent.db, []))[1].append(agent)
    for db, alike in by_db.values():
        with db.write() as conn:
            services.heartbeat_all(conn, [agent.service_id for agent in alike], now)


class _NoFreeVf(Exception):
    """The host has no free virtual function for an SR-IOV port."""


def _inventory(total: int, reserved: int, ratio: float) -> dict[str, Any]:
    return {
        "total": total,
        "reserved": reserved,
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": ratio,
    }


def _sriov_ports(instance: Mapping[str, Any]) -> list[PortEntry]:
    """The instance's ports that each take a virtual function on its host."""
    ports = map(PortEntry.from_json, instance["network_info"])
    return [entry for entry in ports if entry.vnic_type in SRIOV_VNIC_TYPES]
