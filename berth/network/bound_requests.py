"""Carrying a bound port's new resource request to its server's allocation.

A port's request follows the minimum rules of its QoS policy (else its network's), so four
writes can change it: a port's ``qos_policy_id``, a network's, and a minimum rule created,
changed or deleted in a policy in use. ``following_bound_requests`` wraps such a write, inside
its transaction: it reads the requests of the bound ports concerned before and after, and for
each port whose request changed it

1. refuses (409) what cannot be done in place (``allocation_change.check``): a port that asked
   nothing before, a new kind of resource, a port with bindings on other hosts (on the move);
2. drops the groups that went away from the binding profile's ``allocation``;
3. rewrites the allocation of each server concerned in Placement, last, so that a refusal there
   rolls the whole write back; if a later server's rewrite is refused, the earlier ones are
   rewritten back, and so are all of them if the transaction rolls back after all (a later
   refusal in the same request, a failed commit).

Unbound ports have no allocation: their requests change freely.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection

from berth.network import allocation_change, ports
from berth.network.allocation_change import PortRequestChange, Reason, refused
from berth.network.placement_allocations import PlacementAllocations
from berth.network.store import ports as store

LOG = logging.getLogger(__name__)


@contextmanager
def following_bound_requests(
    conn: Connection, placement: PlacementAllocations | None, port_ids: Sequence[str]
) -> Iterator[None]:
    """Whatever is done inside that changes bound ports' requests changes their allocations
    too, or is refused (409, QosPolicyChangeRefused) with the reason."""
    if not port_ids:
        # Nothing followed (an update that leaves the QoS policy alone): nothing to read.
        yield
        return
    bound = [row for row in _locked(conn, port_ids) if row["binding_host"]]
    before = ports.resource_requests(conn, bound)
    yield
    rows = store.list_visible(conn, None, {"id": [r["id"] for r in bound]})
    after = ports.resource_requests(conn, rows)
    changes = [
        _change(row, before[row["id"]], after[row["id"]])
        for row in rows
        if not _same(before[row["id"]], after[row["id"]])
    ]
    if not changes:
        return
    for change in changes:
        if store.inactive_bindings(conn, change.port_id):
            raise refused(
                [change.port_id],
                Reason.MOVING,
                "the port has bindings on other hosts (its server is moving); change the "
                "policy once the move is done",
            )
        allocation_change.check(change)
    if placement is None:
        raise refused(
            [c.port_id for c in changes],
            Reason.NO_PLACEMENT,
            "this network service has no Placement configured (network.placement_url)",
        )
    profiles = {row["id"]: row["binding_profile"] for row in rows}
    for change in changes:
        _update_profile(conn, change, profiles[change.port_id])
    by_consumer = _by_consumer(changes)
    _apply(placement, by_consumer)
    _undo_on_rollback(conn, placement, by_consumer)


def _locked(conn: Connection, port_ids: Sequence[str]) -> list[Mapping[str, Any]]:
    """The ports, each locked for the rest of the transaction, in id order (no deadlocks)."""
    return [row for pid in sorted(set(port_ids)) if (row := store.get_for_update(conn, pid))]


def _same(old: Any, new: Any) -> bool:
    if old is None or new is None:
        return old is new
    return bool(old.as_dict() == new.as_dict())


def _change(row: Mapping[str, Any], old: Any, new: Any) -> PortRequestChange:
    mapped = (row["binding_profile"] or {}).get("allocation")
    providers = {str(g): str(rp) for g, rp in mapped.items()} if isinstance(mapped, dict) else {}
    return PortRequestChange(row["id"], row["device_id"] or "", old, new, providers)


def _update_profile(
    conn: Connection, change: PortRequestChange, profile: Mapping[str, Any]
) -> None:
    """Groups the new request no longer has leave the profile's allocation."""
    kept = allocation_change.profile_allocation(change)
    if kept == profile.get("allocation"):
        return
    updated = {k: v for k, v in profile.items() if k != "allocation"}
    if kept is not None:
        updated["allocation"] = kept
    store.update(conn, change.port_id, {"binding_profile": updated})


def _by_consumer(changes: Sequence[PortRequestChange]) -> dict[str, list[PortRequestChange]]:
    found: dict[str, list[PortRequestChange]] = {}
    for change in changes:
        found.setdefault(change.consumer, []).append(change)
    return dict(sorted(found.items()))


def _apply(
    placement: PlacementAllocations, by_consumer: Mapping[str, Sequence[PortRequestChange]]
) -> None:
    """One allocation rewrite per server; a refusal puts back the servers done before it."""
    done: dict[str, Sequence[PortRequestChange]] = {}
    try:
        for consumer, mine in by_consumer.items():
            placement.apply(consumer, mine)
            done[consumer] = mine
    except Exception:
        _put_back(placement, done)
        raise


def _put_back(
    placement: PlacementAllocations, done: Mapping[str, Sequence[PortRequestChange]]
) -> None:
    for consumer, mine in reversed(done.items()):
        try:
            placement.apply(consumer, [c.reversed() for c in mine])
        except Exception:  # the refusal being raised matters more; the audit finds what is left
            LOG.exception("could not put back the allocation of %s", consumer)


def _undo_on_rollback(
    conn: Connection,
    placement: PlacementAllocations,
    by_consumer: Mapping[str, Sequence[PortRequestChange]],
) -> None:
    """Placement took the new amounts; if the port rows do not commit after all, give them back."""
    committed = False

    def on_commit(_conn: Connection) -> None:
        nonlocal committed
        committed = True

    def on_rollback(_conn: Connection) -> None:
        if not committed:
            _put_back(placement, by_consumer)

    event.listen(conn, "commit", on_commit, once=True)
    event.listen(conn, "rollback", on_rollback, once=True)
