"""Why no host (or how few) could take an instance: the scheduler's diagnosis as a value.

It is made by the scheduler (``berth.compute.scheduler.diagnosis`` says what each stage and
reason code means), crosses the bus with a NoValidHost, and ends up in the server's fault.
When Placement found nothing, ``groups`` says, per request group of the query (the flavor's,
each port's), whether it could be met alone and, when not, what was short
(``berth.compute.scheduler.explain`` finds it; the codes are listed there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.wire import Version, read, stamp


def ranked(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True, slots=True)
class StageOutcome:
    name: str
    removed: int
    # Reason code -> hosts, most first.
    reasons: tuple[tuple[str, int], ...]

    def render(self) -> str:
        detail = ", ".join(f"{code}: {n}" for code, n in self.reasons)
        return f"{self.name} removed {self.removed} ({detail})"


@dataclass(frozen=True, slots=True)
class Shortfall:
    """One thing a request asked of Placement that no provider could give (``code`` is fixed;
    ``subject`` the resource class, trait or aggregates; ``detail`` what makes it readable:
    a bandwidth's direction and physical network, the zone or port a limit comes from)."""

    code: str
    subject: str = ""
    amount: int | None = None
    detail: tuple[tuple[str, str], ...] = ()

    def get(self, key: str) -> str | None:
        return dict(self.detail).get(key)

    def render(self) -> str:
        return _RENDER.get(self.code, _render_plain)(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "subject": self.subject,
            "amount": self.amount,
            "detail": dict(self.detail),
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Shortfall:
        return cls(
            str(document["code"]),
            str(document.get("subject") or ""),
            document.get("amount"),
            tuple((document.get("detail") or {}).items()),
        )


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """One request group of the Placement query, asked about alone."""

    # "flavor" for the flavor's groups, else the port id.
    owner: str
    suffix: str
    met_alone: bool
    shortfalls: tuple[Shortfall, ...] = ()
    # The port's request group id (None for the flavor).
    request_group: str | None = None

    @property
    def port_id(self) -> str | None:
        return None if self.owner == FLAVOR else self.owner

    def render(self) -> str:
        if self.owner == FLAVOR:
            name = "flavor" if not self.suffix else f"flavor group {self.suffix}"
        else:
            name = f"port {self.owner}"
        return f"{name}: " + ", ".join(s.render() for s in self.shortfalls)

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "port_id": self.port_id,
            "request_group": self.request_group,
            "suffix": self.suffix,
            "met_alone": self.met_alone,
            "shortfalls": [s.to_json() for s in self.shortfalls],
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> GroupVerdict:
        return cls(
            owner=str(document["owner"]),
            suffix=str(document.get("suffix") or ""),
            met_alone=bool(document["met_alone"]),
            shortfalls=tuple(Shortfall.from_json(s) for s in document.get("shortfalls") or ()),
            request_group=document.get("request_group"),
        )


FLAVOR = "flavor"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    hosts: int
    placement_hosts: int
    available: int
    stages: tuple[StageOutcome, ...] = ()
    # Per resource class / trait, how many hosts Placement could not use for it.
    shortfall_resources: tuple[tuple[str, int], ...] = ()
    shortfall_traits: tuple[tuple[str, int], ...] = ()
    seed: int | None = None
    # Per request group of the Placement query, asked alone (only when Placement found nothing).
    groups: tuple[GroupVerdict, ...] = ()
    # What fails only when the groups are asked together (each met alone).
    together: tuple[Shortfall, ...] = ()

    def removed_by(self, stage: str) -> int:
        return sum(s.removed for s in self.stages if s.name == stage)

    def reasons(self, stage: str) -> dict[str, int]:
        return {code: n for s in self.stages if s.name == stage for code, n in s.reasons}

    def with_placement_shortfall(
        self, resources: Mapping[str, int], traits: Mapping[str, int] | None = None
    ) -> Diagnosis:
        """This diagnosis, saying why Placement returned no more hosts than it did."""
        return dataclasses.replace(
            self,
            shortfall_resources=ranked({k: v for k, v in resources.items() if v}),
            shortfall_traits=ranked({k: v for k, v in (traits or {}).items() if v}),
        )

    def with_groups(
        self, groups: tuple[GroupVerdict, ...], together: tuple[Shortfall, ...] = ()
    ) -> Diagnosis:
        """This diagnosis, saying which request groups Placement could not meet, and why."""
        return dataclasses.replace(self, groups=groups, together=together)

    def render(self) -> str:
        parts = [f"Placement returned {self.placement_hosts}{self._shortfall()}"]
        parts += [g.render() for g in self.groups if not g.met_alone]
        parts += [s.render() for s in self.together]
        parts += [stage.render() for stage in self.stages]
        return f"{self.available}/{self.hosts} hosts are available: " + "; ".join(parts)

    __str__ = render

    def _shortfall(self) -> str:
        items = [f"insufficient {rc}: {n}" for rc, n in self.shortfall_resources]
        for trait, n in self.shortfall_traits:
            if trait.startswith("!"):
                items.append(f"forbidden trait {trait[1:]}: {n}")
            else:
                items.append(f"missing trait {trait}: {n}")
        return f" ({', '.join(items)})" if items else ""

    # 1.0: first versioned form.
    # 1.1: groups and together (what each request group lacked).
    VERSION = Version(1, 1)

    def to_json(self) -> dict[str, Any]:
        """For the bus, a fault's details or an API answer (``message`` is the rendered line)."""
        return stamp(
            Diagnosis.VERSION,
            {
                "hosts": self.hosts,
                "placement_hosts": self.placement_hosts,
                "available": self.available,
                "stages": [
                    {"name": s.name, "removed": s.removed, "reasons": dict(s.reasons)}
                    for s in self.stages
                ],
                "placement_shortfall": {
                    "resources": dict(self.shortfall_resources),
                    "traits": dict(self.shortfall_traits),
                },
                "seed": self.seed,
                "groups": [g.to_json() for g in self.groups],
                "together": [s.to_json() for s in self.together],
                "message": self.render(),
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Diagnosis:
        document = read("Diagnosis", Diagnosis.VERSION, document)
        shortfall = document.get("placement_shortfall") or {}
        return cls(
            hosts=int(document["hosts"]),
            placement_hosts=int(document["placement_hosts"]),
            available=int(document["available"]),
            stages=tuple(
                StageOutcome(s["name"], int(s["removed"]), tuple(s["reasons"].items()))
                for s in document.get("stages") or ()
            ),
            shortfall_resources=tuple((shortfall.get("resources") or {}).items()),
            shortfall_traits=tuple((shortfall.get("traits") or {}).items()),
            seed=document.get("seed"),
            groups=tuple(GroupVerdict.from_json(g) for g in document.get("groups") or ()),
            together=tuple(Shortfall.from_json(s) for s in document.get("together") or ()),
        )


def _render_plain(s: Shortfall) -> str:
    return f"{s.code} {s.subject}".strip()


def _insufficient(s: Shortfall) -> str:
    unit = s.get("unit")
    kind = s.get("kind")
    if kind:
        text = f"no provider has {s.amount} {unit} of {kind} ({s.subject})"
    else:
        text = f"no provider has {s.amount} {s.subject}"
    physnet = s.get("physical_network")
    if physnet:
        text += f" on physical network {physnet}"
    return text


def _member_of(s: Shortfall) -> str:
    if s.get("availability_zone"):
        return f"no host in availability zone {s.get('availability_zone')} has it"
    if s.get("port"):
        return f"no host reaching a segment of port {s.get('port')}'s network has it"
    return f"no host in aggregates {s.subject} has it"


_RENDER = {
    "insufficient-resource": _insufficient,
    "missing-trait": lambda s: f"no provider has trait {s.subject}",
    "forbidden-trait": lambda s: f"every provider with room has forbidden trait {s.subject}",
    "resources-together": lambda s: f"no host has {s.subject} together",
    "member-of": _member_of,
    "in-tree": lambda s: f"the requested compute node {s.subject} has no room for it",
    "disabled-hosts": lambda s: "only disabled compute nodes have room for it",
    "rules-together": lambda s: "each of its rules can be met, but never all at once",
    "same-subtree": lambda s: (
        f"port {s.get('port')}'s request groups {s.subject} fit only under different providers"
    ),
    "groups-together": lambda s: (
        "each request group fits somewhere, but no host fits them all together"
    ),
}
