"""RequestSpecs as JSON: how they are kept in the API database and travel on the bus.

The API writes one when a server is asked for (flavor, image, hints, zone, group); the
super-conductor adds the ports it found or made, with their resource requests, before it asks
the scheduler. Every later move of the server starts from the same spec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from berth.compute.scheduler.request_spec import (
    Flavor,
    Image,
    PortRequest,
    RequestSpec,
    SchedulerHints,
    ServerGroup,
)


def to_json(spec: RequestSpec) -> dict[str, Any]:
    """A JSON-safe dict (tuples become lists, frozensets sorted lists)."""
    document = dataclasses.asdict(spec)
    document["ignore_hosts"] = sorted(spec.ignore_hosts)
    return _lists(document)  # type: ignore[no-any-return]


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


def from_json(document: Mapping[str, Any]) -> RequestSpec:
    group = document.get("server_group")
    hints = document.get("hints") or {}
    return RequestSpec(
        instance_uuids=tuple(document["instance_uuids"]),
        project_id=document["project_id"],
        user_id=document["user_id"],
        flavor=Flavor(
            **{
                **document["flavor"],
                "extra_specs": dict(document["flavor"].get("extra_specs") or {}),
            }
        ),
        image=Image(
            **{**document["image"], "properties": dict(document["image"].get("properties") or {})}
        ),
        ports=tuple(
            PortRequest(
                port_id=p["port_id"],
                resource_request=p.get("resource_request") or {},
                segment_aggregates=tuple(p.get("segment_aggregates") or ()),
                vnic_type=p.get("vnic_type", "normal"),
            )
            for p in document.get("ports") or ()
        ),
        availability_zone=document.get("availability_zone"),
        hints=SchedulerHints(
            group=hints.get("group"),
            same_host=tuple(hints.get("same_host") or ()),
            different_host=tuple(hints.get("different_host") or ()),
        ),
        server_group=(
            ServerGroup(
                uuid=group["uuid"],
                policy=group["policy"],
                hosts=tuple(group.get("hosts") or ()),
                members=tuple(group.get("members") or ()),
                max_server_per_host=int(group.get("max_server_per_host") or 1),
            )
            if group
            else None
        ),
        ignore_hosts=frozenset(document.get("ignore_hosts") or ()),
        boot_from_volume=bool(document.get("boot_from_volume")),
    )
