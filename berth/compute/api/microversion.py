"""The Compute API's microversions: the range served, and the versions whose behaviour Berth
implements differently from the one before (each named where it is used)."""

from __future__ import annotations

from collections.abc import Mapping

import microversion_parse

from berth.compute import exceptions

SERVICE_TYPE = "compute"
MIN = "2.1"
# Up to 2.64 every change that touches the resources Berth serves is implemented; the versions
# between change resources Berth does not have (volumes, migrations lists...).
MAX = "2.64"
VERSIONS = [f"2.{minor}" for minor in range(1, 65)]
LEGACY_HEADER = "x-openstack-nova-api-version"

MORE_SERVER_ATTRIBUTES = (2, 3)  # an admin sees a server's reservation_id (and more upstream)
LOCKED_IN_SERVER = (2, 9)  # a server shows whether it is locked
SERVER_DESCRIPTION = (2, 19)  # a server has a description (create, update, rebuild, views)
EVACUATE_NO_SHARED_STORAGE = (2, 14)  # evacuate refuses onSharedStorage, answers 202 bare
DELETED_SERVER_ACTIONS = (2, 21)  # a deleted server's instance actions can be read
MIGRATION_TYPES = (2, 23)  # migrations show migration_type and links; /servers/{id}/migrations
LIVE_MIGRATION_AUTO = (2, 25)  # block_migration may be "auto"; disk_over_commit is gone
SERVER_TAGS = (2, 26)  # /servers/{id}/tags; tags in server views and list filters
EVACUATE_FORCE = (2, 29)  # an evacuation to a named host may be forced
LIVE_MIGRATION_FORCE = (2, 30)  # a live migration to a named host may be forced
PROXIES_GONE = (2, 36)  # the proxies of the network's and image's resources answer 404
NETWORKS_AUTO_NONE = (2, 37)  # networks is required: a list, "auto" or "none"
FLAVOR_IN_SERVER = (2, 47)  # a server shows its flavor's values, not a link
TAGS_AT_CREATE = (2, 52)  # a server may be given its tags when it is created
ACTION_EVENTS_FOR_ALL = (2, 51)  # an action's events show to whoever may see it
REBUILD_KEY_NAME = (2, 54)  # a rebuild may set key_name; its answer shows it
MIGRATE_TO_HOST = (2, 56)  # a cold migration may name its host
REBUILD_USER_DATA = (2, 57)  # a rebuild's answer shows user_data; personality is gone
PERSONALITY_GONE = (2, 57)  # create and rebuild take no personality; rebuild takes user_data
ACTIONS_PAGED = (2, 58)  # actions show updated_at; limit, marker and changes-since
MIGRATIONS_PAGED = (2, 59)  # migrations show uuid; limit, marker and changes-since
EVENT_HOSTS = (2, 62)  # events show hostId (and host to whom the events rule allows)
TRUSTED_CERTS_IN_SERVER = (2, 63)  # a server shows trusted_image_certificates; rebuild takes them
SERVER_GROUP_POLICY_RULES = (2, 64)  # one "policy" and "rules" instead of "policies"

Version = microversion_parse.Version


def negotiate(headers: Mapping[str, str]) -> Version:
    """The version a request asks for: the minimum when absent, the maximum for 'latest'."""
    asked = microversion_parse.get_version(
        dict(headers), SERVICE_TYPE, legacy_headers=[LEGACY_HEADER]
    )
    if asked is None:
        asked = MIN
    try:
        return microversion_parse.extract_version(
            {"openstack-api-version": f"{SERVICE_TYPE} {asked}"}, SERVICE_TYPE, VERSIONS
        )
    except TypeError as exc:
        raise exceptions.BadRequest(f"Invalid API version request: {exc}") from exc
    except ValueError:
        raise exceptions.VersionNotAcceptable(
            f"Version {asked} is not supported by the API. Minimum is {MIN} and maximum is {MAX}."
        ) from None


def headers_for(version: Version) -> dict[str, str]:
    value = f"{version.major}.{version.minor}"
    return {
        "openstack-api-version": f"{SERVICE_TYPE} {value}",
        "x-openstack-nova-api-version": value,
        "vary": "OpenStack-API-Version, X-OpenStack-Nova-API-Version",
    }
