"""Small builders for scheduler tests: specs, host states, candidates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from berth.compute.objects.request_spec import Flavor, Image, PortRequest, RequestSpec
from berth.compute.scheduler.candidates import Candidate, ProviderSummary, read_answer
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.selection import Claim, Selection

CELL1 = "cell-1"
CELL2 = "cell-2"


def flavor(**kw: Any) -> Flavor:
    fields: dict[str, Any] = {
        "id": "f1",
        "name": "m1.small",
        "vcpus": 2,
        "memory_mb": 2048,
        "root_gb": 20,
    }
    fields.update(kw)
    return Flavor(**fields)


def spec(n: int = 1, **kw: Any) -> RequestSpec:
    fields: dict[str, Any] = {
        "instance_uuids": tuple(f"inst-{i}" for i in range(n)),
        "project_id": "p",
        "user_id": "u",
        "flavor": flavor(),
        "image": Image("img"),
    }
    fields.update(kw)
    return RequestSpec(**fields)


def host(name: str, cell: str = CELL1, **kw: Any) -> HostState:
    fields: dict[str, Any] = {
        "host": name,
        "node": name,
        "node_uuid": f"rp-{name}",
        "cell_uuid": cell,
        "free_vcpus": 16,
        "free_ram_mb": 32768,
        "free_disk_gb": 500,
    }
    fields.update(kw)
    return HostState(**fields)


def candidate(
    h: HostState | str,
    amounts: Mapping[str, int] | None = None,
    *,
    extra: Mapping[str, Mapping[str, int]] | None = None,
    mappings: Mapping[str, tuple[str, ...]] | None = None,
) -> Candidate:
    """A candidate taking ``amounts`` from the host's root (and ``extra`` from other providers
    of its tree)."""
    root = h if isinstance(h, str) else h.node_uuid
    amounts = dict(amounts or {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20})
    allocations: dict[str, dict[str, int]] = {root: amounts}
    host_amounts = dict(amounts)
    for rp, more in (extra or {}).items():
        allocations[rp] = dict(more)
        for rc, n in more.items():
            host_amounts[rc] = host_amounts.get(rc, 0) + n
    maps = dict(mappings or {"": (root,)})
    return Candidate(root, allocations, maps, "1.35", host_amounts)


def summaries_of(described: Mapping[str, Mapping[str, Any]]) -> dict[str, ProviderSummary]:
    """Provider summaries as Placement would send them (``described``: the JSON of each), read
    as the scheduler reads them."""
    body = orjson.dumps({"allocation_requests": [], "provider_summaries": described})
    return dict(read_answer(body, "1.35").summaries)


def port(port_id: str, *groups: Mapping[str, Any], **kw: Any) -> PortRequest:
    same = [g["id"] for g in groups]
    request: dict[str, Any] = (
        {"request_groups": list(groups), "same_subtree": same} if groups else {}
    )
    return PortRequest(port_id, request, **kw)


def recording(into: list[Selection]) -> Claim:
    """A claim that always succeeds and remembers what it was given."""

    def claim(selection: Selection) -> bool:
        into.append(selection)
        return True

    return claim
