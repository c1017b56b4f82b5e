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
