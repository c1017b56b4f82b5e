"""Fixtures named in the gabbi YAML files' ``fixtures:`` lists.

Gabbi builds fixtures without arguments, so the test that runs a YAML file sets ``CURRENT`` to the
service under test first. Fixtures that need data create it through the HTTP API, like a client would.
"""

from __future__ import annotations

import os
import uuid

import httpx
from gabbi.fixture import GabbiFixture

from berth.placement.service import PlacementService

CURRENT: dict[str, PlacementService] = {}


def _client() -> httpx.Client:
    from tests.conftest import wsgi_client

    c = wsgi_client(CURRENT["service"])
    c.headers.update(
        {
            "x-auth-token": "admin",
            "accept": "application/json",
            "openstack-api-version": "placement latest",
        }
    )
    return c


class APIFixture(GabbiFixture):
    """Fresh ids in the environment for the YAML to use; the database is already empty."""

    def start_fixture(self) -> None:
        for name in (
            "RP_UUID",
            "RP_UUID1",
            "RP_UUID2",
            "PARENT_PROVIDER_UUID",
            "ALT_PARENT_PROVIDER_UUID",
            "CONSUMER_UUID",
            "CONSUMER_0",
            "CONSUMER_ID",
            "PROJECT_ID",
            "ALT_PROJECT_ID",
            "USER_ID",
            "ALT_USER_ID",
            "INSTANCE_UUID",
            "MIGRATION_UUID",
        ):
            os.environ[name] = str(uuid.uuid4())
        os.environ["RP_NAME"] = "rp-" + uuid.uuid4().hex[:8]
        os.environ["RP_NAME1"] = "rp1-" + uuid.uuid4().hex[:8]
        os.environ["RP_NAME2"] = "rp2-" + uuid.uuid4().hex[:8]
        os.environ["CUSTOM_RES_CLASS"] = "CUSTOM_IRON_NFV"

    def stop_fixture(self) -> None:
        return None


class CORSFixture(APIFixture):
    """The service with one allowed cross-site origin, http://valid.example.com."""

    def start_fixture(self) -> None:
        super().start_fixture()
        CURRENT["service"].settings.cors_allowed_origins = ["http://valid.example.com"]


class AllocationFixture(APIFixture):
    """A provider with inventory and three consumers' allocations, at generation 5:

        +----- same user -----+             ALT_USER_ID
        |                     |                  |
    +---+-----------+  +------+------+  +--------+--------+
    | CONSUMER_0    |  | CONSUMER_ID |  | ALT_CONSUMER_ID |
    | DISK_GB: 1000 |  | VCPU: 6     |  | VCPU: 1         |
    |               |  |             |  | DISK_GB: 20     |
    +-------------+-+  +------+------+  +-+---------------+
                  |           |           |
                +-+-----------+-----------+-+
                | RP_UUID                   |
                |  VCPU: 10 (max_unit 10)   |
                |  DISK_GB: 2048 (min 10,   |
                |    max 1000, step 10)     |
                +---------------------------+

    ALT_RP_UUID and ALT_RP_NAME name a provider that does not exist yet. Inventory is written
    one class at a time, as upstream's fixture does, so the generations match its stories.
    """

    def start_fixture(self) -> None:
        super().start_fixture()
        from berth.placement.capacity import Inventory
        from berth.placement.store import allocations, inventories, providers

        for name in ("CONSUMER_0", "CONSUMER_ID", "ALT_CONSUMER_ID", "ALT_RP_UUID"):
            os.environ[name] = str(uuid.uuid4())
        os.environ["ALT_RP_NAME"] = str(uuid.uuid4())
        stock = {
            "DISK_GB": Inventory(total=2048, step_size=10, min_unit=10, max_unit=1000),
            "VCPU": Inventory(total=10, step_size=1, min_unit=1, max_unit=10),
        }
        owned = [
            ("CONSUMER_0", "USER_ID", {"DISK_GB": 1000}),
            ("CONSUMER_ID", "USER_ID", {"VCPU": 6}),
            ("ALT_CONSUMER_ID", "ALT_USER_ID", {"DISK_GB": 20, "VCPU": 1}),
        ]
        with CURRENT["service"].db.write() as conn:
            provider = providers.create(conn, os.environ["RP_UUID"], os.environ["RP_NAME"])
            for rc, inventory in stock.items():
                inventories.add(conn, provider, rc, inventory)
                provider = providers.get(conn, provider.uuid)
            for consumer, user, resources in owned:
                claim = allocations.Claim(
                    consumer_uuid=os.environ[consumer],
                    allocations={provider.uuid: resources},
                    project_id=os.environ["PROJECT_ID"],
                    user_id=os.environ[user],
                )
                allocations.write(conn, [claim])
