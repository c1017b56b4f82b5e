"""A workload for ``berth sim``: what to boot and delete, and when, in simulated seconds.

The file (YAML; etc/workload.example.yaml shows every key)::

    seed: 7                       # the random arrivals' seed (default 0)
    flavors:   {small: {vcpus: 2, memory_mb: 4096, disk_gb: 20}}
    qos_policies:
      bw: {min_kbps: 1000000, direction: egress, min_kpps: 100}
    networks:
      public: {physnet: public, qos_policy: bw}   # flat on a physnet; without one, vxlan
    server_groups: {web: anti-affinity}
    events:
      - at: 0                     # once, at this time
        boot: {name: web, flavor: small, count: 3, group: web, networks: [public]}
      - every: 30                 # regularly, from `from` (default 0) until `until`
        until: 600
        boot: {flavor: small, ports: [{network: public, qos_policy: bw}], lifetime: 120}
      - rate: 0.05                # random (Poisson) arrivals per second, from `from` until `until`
        until: 600
        boot: {flavor: small}
      - at: 300
        delete: [web-1]           # servers by name: a boot's name (default its flavor) and -N

Loading checks the whole file, names included, and says what is wrong and where
(``events[2].boot.flavor: 'huge' is not one of the workload's flavors``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "Action", "Boot", "Delete", "Network", "QosPolicy", "Workload", "WorkloadError", "load", "parse",
]  # fmt: skip

# More arrivals than this is a typing error, not a workload one process replays.
MAX_ACTIONS = 20_000


class WorkloadError(ValueError):
    """The workload cannot be replayed; the message says where in the file and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Flavor(_Strict):
    vcpus: int = Field(ge=1)
    memory_mb: int = Field(ge=1)
    disk_gb: int = Field(0, ge=0)


class QosPolicy(_Strict):
    # A minimum bandwidth rule (kbit/s) in this direction, and/or a minimum packet rate rule.
    min_kbps: int | None = Field(None, ge=1)
    direction: Literal["egress", "ingress"] = "egress"
    min_kpps: int | None = Field(None, ge=1)
    packet_rate_direction: Literal["any", "egress", "ingress"] = "any"

    @model_validator(mode="after")
    def _has_a_rule(self) -> QosPolicy:
        if self.min_kbps is None and self.min_kpps is None:
            raise ValueError("a QoS policy needs min_kbps or min_kpps")
        return self


class Network(_Strict):
    # A flat network on this physical network; without one, a vxlan (tunnelled) network.
    physnet: str | None = None
    qos_policy: str | None = None


class Port(_Strict):
    network: str
    qos_policy: str | None = None


class ServerSpec(_Strict):
    flavor: str
    name: str | None = None
    count: int = Field(1, ge=1, le=1000)
    networks: tuple[str, ...] = ()
    ports: tuple[Port, ...] = ()
    group: str | None = None
    # Simulated seconds after its arrival the server is deleted (if it became ACTIVE).
    lifetime: float | None = Field(None, gt=0)


class Event(_Strict):
    at: float | None = Field(None, ge=0)
    every: float | None = Field(None, gt=0)
    rate: float | None = Field(None, gt=0)
    from_: float = Field(0, ge=0, alias="from")
    until: float | None = Field(None, ge=0)
    boot: ServerSpec | None = None
    delete: tuple[str, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_name(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("delete"), str):
            return {**data, "delete": [data["delete"]]}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> Event:
        if (self.boot is None) == (self.delete is None):
            raise ValueError("an event has either boot or delete")
        timings = [k for k in ("at", "every", "rate") if getattr(self, k) is not None]
        if len(timings) != 1:
            raise ValueError("an event has exactly one of at, every, rate")
        if timings[0] != "at" and (self.until is None or self.boot is None):
            raise ValueError("every and rate repeat a boot, from `from` until `until`")
        if self.until is not None and self.until < self.from_:
            raise ValueError("until is before from")
        return self


class WorkloadFile(_Strict):
    seed: int = 0
    flavors: dict[str, Flavor] = Field(min_length=1)
    qos_policies: dict[str, QosPolicy] = {}
    # Each network's subnet is 10.<n>.0.0/16.
    networks: dict[str, Network] = Field({}, max_length=250)
    server_groups: dict[
        str, Literal["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"]
    ] = {}
    events: tuple[Event, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Boot:
    name: str
    spec: ServerSpec


@dataclass(frozen=True)
class Delete:
    name: str


@dataclass(frozen=True, order=True)
class Action:
    """One thing to do at ``time``. At one time deletes come first (``phase`` 0), so that what
    they free is there for the boots; ``order`` keeps the file's order among the rest."""

    time: float
    phase: int
    order: int
    what: Boot | Delete = field(compare=False)


@dataclass(frozen=True)
class Workload:
    file: WorkloadFile
    # Every boot and delete, in the order they happen.
    actions: tuple[Action, ...]

    @property
    def flavors(self) -> Mapping[str, Flavor]:
        return self.file.flavors

    def largest_flavor(self) -> Flavor:
        """The flavor asking for most (VCPUs, then memory, then disk): fragmentation's yardstick."""
        return max(self.file.flavors.values(), key=lambda f: (f.vcpus, f.memory_mb, f.disk_gb))


def load(path: Path) -> Workload:
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise WorkloadError(f"cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise WorkloadError(f"{path} is not YAML: {exc}") from exc
    return parse(document)


def parse(document: Any) -> Workload:
    if not isinstance(document, Mapping):
        raise WorkloadError("a workload is a mapping with flavors and events")
    try:
        file = WorkloadFile.model_validate(document)
    except ValidationError as exc:
        raise WorkloadError(_first_error(exc)) from exc
    _check_names(file)
    return Workload(file, _actions(file))


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]).lstrip(".")
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _check_names(file: WorkloadFile) -> None:
    def known(where: str, kind: str, name: str | None, names: Mapping[str, Any]) -> None:
        if name is not None and name not in names:
            raise WorkloadError(f"{where}: {name!r} is not one of the workload's {kind}")

    for name, network in file.networks.items():
        known(f"networks.{name}.qos_policy", "qos_policies", network.qos_policy, file.qos_policies)
    for i, event in enumerate(file.events):
        if event.boot is None:
            continue
        where = f"events[{i}].boot"
        known(f"{where}.flavor", "flavors", event.boot.flavor, file.flavors)
        known(f"{where}.group", "server_groups", event.boot.group, file.server_groups)
        for n, network in enumerate(event.boot.networks):
            known(f"{where}.networks[{n}]", "networks", network, file.networks)
        for n, port in enumerate(event.boot.ports):
            known(f"{where}.ports[{n}].network", "networks", port.network, file.networks)
            known(
                f"{where}.ports[{n}].qos_policy", "qos_policies", port.qos_policy, file.qos_policies
            )


def _arrivals(event: Event, rng: random.Random) -> list[float]:
    if event.at is not None:
        return [event.at]
    until = event.until or 0.0
    times: list[float] = []
    now = event.from_
    while now <= until and len(times) <= MAX_ACTIONS:
        times.append(now)
        now += event.every if event.every is not None else rng.expovariate(event.rate or 1.0)
    return times


def _actions(file: WorkloadFile) -> tuple[Action, ...]:
    rng = random.Random(file.seed)
    made: dict[str, int] = {}
    planned: list[tuple[float, Boot | Delete]] = []
    for event in file.events:
        for time in _arrivals(event, rng):
            if event.delete is not None:
                planned += [(time, Delete(name)) for name in event.delete]
                continue
            spec = event.boot
            assert spec is not None  # an event is a boot or a delete (checked above)
            prefix = spec.name or spec.flavor
            for _ in range(spec.count):
                made[prefix] = made.get(prefix, 0) + 1
                name = f"{prefix}-{made[prefix]}"
                planned.append((time, Boot(name, spec)))
                if spec.lifetime is not None:
                    planned.append((time + spec.lifetime, Delete(name)))
    if len(planned) > MAX_ACTIONS:
        raise WorkloadError(f"the workload has more than {MAX_ACTIONS} boots and deletes")
    actions = sorted(
        Action(time, isinstance(what, Boot), order, what)
        for order, (time, what) in enumerate(planned)
    )
    _check_deletes(actions)
    return tuple(actions)


def _check_deletes(actions: list[Action]) -> None:
    booted: set[str] = set()
    for action in actions:
        if isinstance(action.what, Boot):
            booted.add(action.what.name)
        elif action.what.name not in booted:
            raise WorkloadError(
                f"delete of {action.what.name!r} at {action.time:g} s: no server of that name "
                "was booted before then"
            )
