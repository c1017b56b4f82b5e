"""The Placement API's microversions: one list, one comment per version."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import microversion_parse

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"

VERSIONS = [
    "1.0",
    "1.1",  # provider aggregates
    "1.2",  # custom resource classes
    "1.3",  # member_of on GET /resource_providers
    "1.4",  # resources filter on GET /resource_providers
    "1.5",  # DELETE /resource_providers/{uuid}/inventories
    "1.6",  # traits
    "1.7",  # PUT /resource_classes/{name} creates, without a body
    "1.8",  # project_id and user_id required on PUT /allocations/{consumer}
    "1.9",  # GET /usages
    "1.10",  # GET /allocation_candidates
    "1.11",  # 'allocations' link on resource providers
    "1.12",  # allocations in dict form on PUT, GET and in allocation candidates
    "1.13",  # POST /allocations for several consumers
    "1.14",  # nested providers: parent and root uuid, in_tree
    "1.15",  # Last-Modified and Cache-Control headers
    "1.16",  # limit on allocation candidates
    "1.17",  # required traits on allocation candidates, traits in provider summaries
    "1.18",  # required traits on GET /resource_providers
    "1.19",  # generation on provider aggregates
    "1.20",  # POST /resource_providers answers 200 with the provider
    "1.21",  # member_of on allocation candidates
    "1.22",  # forbidden traits
    "1.23",  # error codes in error documents
    "1.24",  # several member_of parameters on GET /resource_providers
    "1.25",  # granular request groups
    "1.26",  # reserved may equal total
    "1.27",  # every inventoried class in provider summaries
    "1.28",  # consumer generations
    "1.29",  # nested providers in allocation candidates
    "1.30",  # POST /reshaper
    "1.31",  # in_tree on allocation candidates
    "1.32",  # forbidden aggregates
    "1.33",  # string suffixes for request groups
    "1.34",  # mappings in allocation requests
    "1.35",  # root_required
    "1.36",  # same_subtree, resourceless request groups
    "1.37",  # re-parenting and un-parenting providers
    "1.38",  # consumer types
    "1.39",  # any-of traits with in: in required
]

Version = microversion_parse.Version
MIN_VERSION = microversion_parse.parse_version_string(VERSIONS[0])
MAX_VERSION = microversion_parse.parse_version_string(VERSIONS[-1])


class VersionError(Exception):
    """The requested microversion is malformed (400) or outside what is served (406)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def negotiate(headers: Mapping[str, str]) -> Version:
    """The microversion a request asks for: the minimum when absent, the maximum for 'latest'.
    ``headers`` are the request's, with lower-case names (Starlette's are, whatever was sent)."""
    return _negotiated(headers.get("openstack-api-version"))


@functools.lru_cache(maxsize=256)
def _negotiated(asked: str | None) -> Version:
    """Clients send the same few headers: each is parsed once (refusals raise anew)."""
    headers = {} if asked is None else {"openstack-api-version": asked}
    try:
        return microversion_parse.extract_version(headers, SERVICE_TYPE, VERSIONS)
    except TypeError as exc:
        raise VersionError(str(exc), 400) from exc
    except ValueError as exc:
        raise VersionError(str(exc), 406) from exc


def header_value(version: Version) -> str:
    return f"{SERVICE_TYPE} {version}"
