"""Fakes of the compute RPC interfaces (``berth.compute.rpc``) for tests of one service alone."""

from __future__ import annotations

from collections.abc import Sequence

from berth.compute.cells import Cell
from berth.compute.rpc import CellConductorAPI, ComputeHostAPI


class NoMessages:
    """A super-conductor and cells for a test in which the API must send nothing."""

    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        raise AssertionError(f"unexpected build_instances({list(instance_uuids)})")

    def unshelve_instance(self, instance_uuid: str, request_id: str) -> None:
        raise AssertionError(f"unexpected unshelve_instance({instance_uuid})")

    def conductor(self, cell: Cell) -> CellConductorAPI:
        raise AssertionError(f"unexpected message to the conductor of {cell.name}")

    def host(self, cell: Cell, host: str) -> ComputeHostAPI:
        raise AssertionError(f"unexpected message to {host} in {cell.name}")
