"""Rewriting a server's allocation in Placement when its bound ports' requests change.

The network service writes an allocation only here, for a QoS policy change of a bound port,
and only in place: the providers stay those the compute side chose (see ``allocation_change``).
The write is guarded by the consumer's generation, read just before; a concurrent change of the
same consumer (409 ``placement.concurrent_update``) reads again and retries a few times.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from berth.network import exceptions
from berth.network.allocation_change import (
    Allocations,
    PortRequestChange,
    Reason,
    growth,
    refused,
    rewrite,
)

LOG = logging.getLogger(__name__)

MICROVERSION = "placement 1.39"
CONCURRENT_UPDATE = "placement.concurrent_update"


class PlacementAllocations:
    def __init__(self, client: httpx.Client, attempts: int = 4) -> None:
        self.client = client
        self.attempts = attempts

    def apply(self, consumer: str, changes: Sequence[PortRequestChange]) -> None:
        """Rewrite ``consumer``'s allocation for ``changes`` (all of that consumer's ports).
        Refuses (409, QosPolicyChangeRefused) when Placement does not take it; nothing changes."""
        port_ids = [c.port_id for c in changes]
        for _ in range(self.attempts):
            held = self._call("GET", consumer).json()
            current: Allocations = {
                rp: entry["resources"] for rp, entry in held.get("allocations", {}).items()
            }
            updated = rewrite(current, changes)
            if updated == current:
                return
            answer = self._call("PUT", consumer, _body(held, updated))
            if answer.status_code == 204:
                return
            if answer.status_code == 409 and _code(answer) == CONCURRENT_UPDATE:
                LOG.info("allocation of %s changed while updating it; reading it again", consumer)
                continue
            grown = ", ".join(
                f"{rc} +{n} on provider {rp}" for rp, rc, n in growth(current, updated)
            )
            raise refused(
                port_ids,
                Reason.CAPACITY,
                f"Placement refused the new amounts ({grown or 'none larger'}) for {consumer}: "
                f"{_detail(answer)}",
            )
        raise refused(
            port_ids,
            Reason.CONTENDED,
            f"the allocation of {consumer} changed {self.attempts} times while it was updated; "
            "try again",
        )

    def _call(self, method: str, consumer: str, body: Any = None) -> httpx.Response:
        path = f"/allocations/{consumer}"
        try:
            answer = self.client.request(
                method, path, json=body, headers={"openstack-api-version": MICROVERSION}
            )
        except httpx.HTTPError as exc:
            raise exceptions.ServiceUnavailable(
                f"Placement did not answer {method} {path}: {exc}"
            ) from exc
        if answer.status_code >= 500 or (method == "GET" and answer.status_code != 200):
            raise exceptions.ServiceUnavailable(
                f"Placement answered {method} {path} with {answer.status_code}: {_detail(answer)}"
            )
        return answer


def _body(held: Mapping[str, Any], updated: Allocations) -> dict[str, Any]:
    """``{"allocations": {RP: {"resources": {...}}}, "project_id", "user_id",
    "consumer_generation", "consumer_type"}``: the consumer's own, with the new amounts."""
    return {
        "allocations": {rp: {"resources": dict(resources)} for rp, resources in updated.items()},
        "project_id": held["project_id"],
        "user_id": held["user_id"],
        "consumer_generation": held["consumer_generation"],
        # A consumer written before 1.38 reads as "unknown", which cannot be written back: the
        # consumer of a port is its server.
        "consumer_type": _consumer_type(held.get("consumer_type")),
    }


def _consumer_type(found: Any) -> str:
    return str(found) if found and found != "unknown" else "INSTANCE"


def _code(answer: httpx.Response) -> str | None:
    try:
        return str(answer.json()["errors"][0]["code"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["errors"][0]["detail"])
    except (ValueError, KeyError, IndexError, TypeError):
        return answer.text[:300]
