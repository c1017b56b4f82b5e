"""openstacksdk's placement proxy against a running Berth placement server."""

from __future__ import annotations

from pathlib import Path

import openstack
import pytest

from tests.integration.server import running_placement


# The SDK warns about its own coming removals (metrics backends, internal methods) as it works.
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:openstack")
def test_sdk_manages_providers_inventories_traits_and_classes(tmp_path: Path) -> None:
    with running_placement(f"sqlite:///{tmp_path / 'placement.db'}") as url:
        conn = openstack.connect(
            auth_type="admin_token",
            auth={"endpoint": url, "token": "admin"},
            placement_endpoint_override=url,
            region_name="test",
        )
        rp = conn.placement.create_resource_provider(name="sdk-rp")
        assert rp.generation == 0
        assert [p.name for p in conn.placement.resource_providers()] == ["sdk-rp"]
        inventory = conn.placement.create_resource_provider_inventory(
            rp, resource_class="VCPU", total=8
        )
        assert (inventory.resource_class, inventory.total) == ("VCPU", 8)
        assert "COMPUTE_NODE" in {t.name for t in conn.placement.traits()}
        assert "VCPU" in {c.name for c in conn.placement.resource_classes()}
        conn.placement.delete_resource_provider_inventory(inventory, resource_provider=rp)
        conn.placement.delete_resource_provider(rp)
        assert list(conn.placement.resource_providers()) == []
