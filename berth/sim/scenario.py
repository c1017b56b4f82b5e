"""What one simulation run replays the workload on: a fleet and the scheduler's settings.

A scheduler settings file (YAML) holds compute settings that shape placement decisions::

    weigher_multipliers: {RAMWeigher: -1.0}   # stack instead of spreading
    host_subset_size: 1
    enabled_filters: [ComputeFilter, ...]
    cpu_allocation_ratio: 4.0                 # host defaults the fleet does not set

Two scenarios (two fleets, or two settings files on one fleet) are compared side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from berth.compute.host import fleet as fleets
from berth.compute.scheduler.weighers import WEIGHERS
from berth.config import ComputeSettings

__all__ = ["SCHEDULER_KEYS", "Scenario", "ScenarioError", "scenario", "scenarios"]

# The compute settings a scheduler settings file may set.
SCHEDULER_KEYS = frozenset(
    {
        "enabled_filters", "weigher_multipliers", "host_subset_size", "max_attempts",
        "placement_limit", "cpu_allocation_ratio", "ram_allocation_ratio",
        "disk_allocation_ratio", "reserved_host_memory_mb", "reserved_host_disk_mb",
    }
)  # fmt: skip


class ScenarioError(ValueError):
    """A fleet or scheduler settings file cannot be used; the message names the file."""


@dataclass(frozen=True)
class Scenario:
    name: str
    fleet: fleets.Fleet
    compute: ComputeSettings


def scheduler_settings(path: Path | None) -> ComputeSettings:
    if path is None:
        return ComputeSettings()
    document = _yaml(path)
    unknown = sorted(set(document) - SCHEDULER_KEYS)
    if unknown:
        raise ScenarioError(
            f"{path}: {', '.join(unknown)} not scheduler settings (allowed: "
            f"{', '.join(sorted(SCHEDULER_KEYS))})"
        )
    try:
        settings = ComputeSettings.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ScenarioError(f"{path}: {where}: {error['msg']}") from exc
    strangers = sorted(set(settings.weigher_multipliers) - set(WEIGHERS))
    if strangers:
        raise ScenarioError(
            f"{path}: weigher_multipliers: no weigher {', '.join(strangers)} "
            f"(known: {', '.join(sorted(WEIGHERS))})"
        )
    return settings


def scenario(name: str, fleet_file: Path, compute: ComputeSettings) -> Scenario:
    """The fleet in ``fleet_file`` with ``compute``'s host defaults, every spawn instant (the
    simulation's clock does not wait for hosts)."""
    try:
        fleet = fleets.parse(_yaml(fleet_file), fleets.host_defaults(compute))
    except fleets.FleetError as exc:
        raise ScenarioError(f"{fleet_file}: {exc}") from exc
    if not fleet.hosts:
        raise ScenarioError(f"{fleet_file}: the fleet has no hosts")
    instant = tuple(replace(host, spawn_seconds=0.0) for host in fleet.hosts)
    return Scenario(name, replace(fleet, hosts=instant), compute)


def scenarios(fleet_files: list[Path], scheduler_files: list[Path]) -> list[Scenario]:
    """One scenario, or two to compare: the i-th fleet with the i-th settings file, a single
    one shared by both."""
    runs = max(len(fleet_files), len(scheduler_files), 1)
    if not fleet_files or len(fleet_files) > 2 or len(scheduler_files) > 2:
        raise ScenarioError("give one or two fleets and at most two scheduler settings files")
    if len(fleet_files) == 2 and len(scheduler_files) == 2:
        raise ScenarioError("compare two fleets or two scheduler settings, not both at once")
    result = []
    for i in range(runs):
        fleet_file = fleet_files[min(i, len(fleet_files) - 1)]
        settings_file = (
            scheduler_files[min(i, len(scheduler_files) - 1)] if scheduler_files else None
        )
        name = (
            fleet_file.stem
            if len(fleet_files) == 2
            else (settings_file.stem if settings_file is not None else fleet_file.stem)
        )
        result.append(scenario(name, fleet_file, scheduler_settings(settings_file)))
    if len(result) == 2 and result[0].name == result[1].name:
        result = [replace(s, name=f"{s.name} ({i + 1})") for i, s in enumerate(result)]
    return result


def _yaml(path: Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ScenarioError(f"cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path} is not YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise ScenarioError(f"{path}: expected a mapping")
    return document
