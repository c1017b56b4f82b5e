"""Building test data through Berth's HTTP API, in the shapes upstream's fixtures describe."""

from __future__ import annotations

import uuid
from typing import Any

import httpx


class Builder:
    """Providers, inventory, traits, aggregates and allocations, each one request at a time."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def _ok(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise RuntimeError(f"{response.request.method} {response.request.url}: {response.text}")
        return response.json() if response.content else None

    def _generation(self, rp: str) -> int:
        return int(self._ok(self.client.get(f"/resource_providers/{rp}"))["generation"])

    def provider(self, name: str, *aggregates: str, parent: str | None = None) -> str:
        """A new provider, optionally under a parent and in aggregates; returns its uuid."""
        rp = str(uuid.uuid4())
        body: dict[str, Any] = {"name": name, "uuid": rp}
        if parent:
            body["parent_provider_uuid"] = parent
        self._ok(self.client.post("/resource_providers", json=body))
        if aggregates:
            self.aggregates(rp, *aggregates)
        return rp

    def aggregates(self, rp: str, *aggregates: str) -> None:
        body = {
            "aggregates": list(aggregates),
            "resource_provider_generation": self._generation(rp),
        }
        self._ok(self.client.put(f"/resource_providers/{rp}/aggregates", json=body))

    def inventory(self, rp: str, rc: str, total: int, **fields: Any) -> None:
        """Add one class of inventory; max_unit defaults to the total, as upstream's tests do."""
        if rc.startswith("CUSTOM_"):
            self.client.put(f"/resource_classes/{rc}")
        fields.setdefault("max_unit", total)
        body = {"resource_class": rc, "total": total, **fields}
        self._ok(self.client.post(f"/resource_providers/{rp}/inventories", json=body))

    def traits(self, rp: str, *traits: str) -> None:
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self.client.put(f"/traits/{trait}")
        body = {"traits": list(traits), "resource_provider_generation": self._generation(rp)}
        self._ok(self.client.put(f"/resource_providers/{rp}/traits", json=body))

    def allocate(
        self, consumer: str, project: str, user: str, resources: dict[str, dict[str, int]]
    ) -> None:
        """Add to a consumer's allocations (creating it), as upstream's set_allocation does."""
        current = self._ok(
            self.client.get(
                f"/allocations/{consumer}", headers={"openstack-api-version": "placement 1.28"}
            )
        )
        allocations = {
            rp: {"resources": dict(a["resources"])} for rp, a in current["allocations"].items()
        }
        for rp, amounts in resources.items():
            allocations.setdefault(rp, {"resources": {}})["resources"].update(amounts)
        body = {
            "allocations": allocations,
            "project_id": project,
            "user_id": user,
            "consumer_generation": current.get("consumer_generation"),
        }
        # 1.28: consumer generations, but no consumer type, like upstream's fixture consumers.
        headers = {"openstack-api-version": "placement 1.28"}
        self._ok(self.client.put(f"/allocations/{consumer}", json=body, headers=headers))
