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


class NetworkTreeFixture(APIFixture):
    """Two compute nodes, one with two physical NICs, and a disk shared through an aggregate:

        AGG_UUID:  cn1 ------------------------------ ss (DISK_GB 1000, MISC_SHARES_VIA_AGGREGATE)
                   | VCPU 8, MEMORY_MB 2048
                   +-- cn1:pf1  NET_BW_EGR_KILOBIT_PER_SEC 10000  CUSTOM_PHYSNET_A
                   +-- cn1:pf2  NET_BW_EGR_KILOBIT_PER_SEC 10000  CUSTOM_PHYSNET_B

                   cn2  VCPU 8, MEMORY_MB 2048, DISK_GB 100, HW_CPU_X86_AVX2

    Uuids are in CN1_UUID, PF1_UUID, PF2_UUID, SS_UUID, CN2_UUID and AGG_UUID.
    """

    def start_fixture(self) -> None:
        super().start_fixture()
        for name in ("CN1_UUID", "PF1_UUID", "PF2_UUID", "SS_UUID", "CN2_UUID", "AGG_UUID"):
            os.environ[name] = str(uuid.uuid4())
        env = os.environ
        with _client() as c:
            for name, key, parent in (
                ("cn1", "CN1_UUID", None),
                ("cn1:pf1", "PF1_UUID", "CN1_UUID"),
                ("cn1:pf2", "PF2_UUID", "CN1_UUID"),
                ("ss", "SS_UUID", None),
                ("cn2", "CN2_UUID", None),
            ):
                body = {"name": name, "uuid": env[key]}
                if parent:
                    body["parent_provider_uuid"] = env[parent]
                c.post("/resource_providers", json=body).raise_for_status()
            stock = {
                "CN1_UUID": {"VCPU": 8, "MEMORY_MB": 2048},
                "PF1_UUID": {"NET_BW_EGR_KILOBIT_PER_SEC": 10000},
                "PF2_UUID": {"NET_BW_EGR_KILOBIT_PER_SEC": 10000},
                "SS_UUID": {"DISK_GB": 1000},
                "CN2_UUID": {"VCPU": 8, "MEMORY_MB": 2048, "DISK_GB": 100},
            }
            for key, classes in stock.items():
                body = {
                    "resource_provider_generation": 0,
                    "inventories": {rc: {"total": total} for rc, total in classes.items()},
                }
                c.put(f"/resource_providers/{env[key]}/inventories", json=body).raise_for_status()
            for trait in ("CUSTOM_PHYSNET_A", "CUSTOM_PHYSNET_B"):
                c.put(f"/traits/{trait}").raise_for_status()
            for key, traits in (
                ("PF1_UUID", ["CUSTOM_PHYSNET_A"]),
                ("PF2_UUID", ["CUSTOM_PHYSNET_B"]),
                ("SS_UUID", ["MISC_SHARES_VIA_AGGREGATE"]),
                ("CN2_UUID", ["HW_CPU_X86_AVX2"]),
            ):
                body = {"resource_provider_generation": 1, "traits": traits}
                c.put(f"/resource_providers/{env[key]}/traits", json=body).raise_for_status()
            for key, generation in (("CN1_UUID", 1), ("SS_UUID", 2)):
                body = {"resource_provider_generation": generation, "aggregates": [env["AGG_UUID"]]}
                c.put(f"/resource_providers/{env[key]}/aggregates", json=body).raise_for_status()
