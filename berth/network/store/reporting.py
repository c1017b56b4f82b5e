"""What the Placement reporter reads of the network database, in a few bulk queries."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.timeutils import utcnow
from berth.network.model import Segment
from berth.network.reporting import SegmentState
from berth.network.store.schema import (
    agents,
    ip_allocations,
    placement_synced,
    segments,
    subnets,
)

# Rows per IN list: well under every database's limit on bound parameters.
_CHUNK = 500


def segment_states(conn: Connection) -> list[SegmentState]:
    """Every segment, with the IPv4 addresses its subnets can give and have given."""
    routed = set(
        conn.scalars(sa.select(subnets.c.network_id).where(subnets.c.segment_id.is_not(None)))
    )
    total: dict[str, int] = {}
    for segment_id, pools in conn.execute(
        sa.select(subnets.c.segment_id, subnets.c.allocation_pools).where(
            subnets.c.segment_id.is_not(None), subnets.c.ip_version == 4
        )
    ):
        total[segment_id] = total.get(segment_id, 0) + _pool_size(pools or [])
    used_query = (
        sa.select(subnets.c.segment_id, sa.func.count(ip_allocations.c.id))
        .join(ip_allocations, ip_allocations.c.subnet_id == subnets.c.id)
        .where(subnets.c.segment_id.is_not(None), subnets.c.ip_version == 4)
        .group_by(subnets.c.segment_id)
    )
    used = {segment_id: int(count) for segment_id, count in conn.execute(used_query)}
    return [
        SegmentState(
            segment=Segment(
                row.id, row.network_id, row.network_type, row.physical_network, row.segmentation_id
            ),
            routed=row.network_id in routed,
            ipv4_total=total.get(row.id, 0),
            ipv4_used=used.get(row.id, 0),
        )
        for row in conn.execute(sa.select(segments).order_by(segments.c.id))
    ]


def _pool_size(pools: Iterable[dict[str, str]]) -> int:
    return sum(
        int(ipaddress.ip_address(p["end"])) - int(ipaddress.ip_address(p["start"])) + 1
        for p in pools
    )


def mark_synced(
    conn: Connection, hosts_in_sync: Iterable[str], hosts_out_of_sync: Iterable[str]
) -> None:
    now = utcnow()
    for hosts, value in ((list(hosts_in_sync), True), (list(hosts_out_of_sync), False)):
        if hosts:
            conn.execute(
                agents.update()
                .where(agents.c.host.in_(hosts), agents.c.resources_synced.is_distinct_from(value))
                .values(resources_synced=value, updated_at=now)
            )


def synced_providers(conn: Connection) -> dict[str, tuple[str, int]]:
    """Provider uuid -> (fingerprint, generation) as the reporter last recorded them."""
    query = sa.select(
        placement_synced.c.provider_uuid, placement_synced.c.fingerprint,
        placement_synced.c.generation,
    )  # fmt: skip
    return {
        uuid: (fingerprint, generation) for uuid, fingerprint, generation in conn.execute(query)
    }


def record_synced(
    conn: Connection, changed: Mapping[str, tuple[str, int]], removed: Iterable[str]
) -> None:
    """Record what changed since the last call (``changed``) and forget ``removed``."""
    gone = [*changed, *removed]
    for start in range(0, len(gone), _CHUNK):
        conn.execute(
            placement_synced.delete().where(
                placement_synced.c.provider_uuid.in_(gone[start : start + _CHUNK])
            )
        )
    rows = [
        {"provider_uuid": uuid, "fingerprint": fingerprint, "generation": generation}
        for uuid, (fingerprint, generation) in changed.items()
    ]
    if rows:
        conn.execute(placement_synced.insert(), rows)
