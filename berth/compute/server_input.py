"""What a client may ask of ``/servers``, checked and parsed: the body of a create
(:func:`parse_create`) and the query of a list (:func:`parse_list_query`).

Pure functions: nothing here reads a database. Every refusal is a
:class:`~berth.compute.exceptions.BadRequest` whose message names the field, so a client learns
what to fix. What needs the databases (does the flavor exist, the image, the zone, the group?) is
checked by :mod:`berth.compute.servers` inside the transaction that writes the build.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import re
import secrets
import string
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.compute import exceptions, guest_input, queueing, server_metadata, server_tags
from berth.compute.objects.request_spec import SchedulerHints

# What one request may create at most, whatever room its project's quotas leave.
MAX_COUNT = 1000
# The most servers one list page holds (a larger ``limit`` is cut to this).
MAX_LIMIT = 1000
_NAME_LENGTH = 255
_HINTS_KEYS = ("os:scheduler_hints", "OS-SCH-HNT:scheduler_hints")
_NETWORK_KEYS = frozenset({"uuid", "port", "fixed_ip", "tag"})
_FALSE = frozenset({"0", "false", "f", "no", "off", "n"})
_TRUE = frozenset({"1", "true", "t", "yes", "on", "y"})
_PASSWORD_ALPHABET = string.ascii_letters + string.digits

# A network request: "auto", "none", or entries {"uuid": N[, "fixed_ip": IP]} | {"port": P}.
Networks = str | list[dict[str, str]]


@dataclass(frozen=True)
class ServerRequest:
    """A create request, checked for shape; ``flavor_ref``/``image_ref`` are bare ids."""

    name: str
    flavor_ref: str
    image_ref: str
    networks: Networks
    availability_zone: str | None
    min_count: int
    max_count: int
    metadata: dict[str, str]
    key_name: str | None
    hints: SchedulerHints
    admin_pass: str
    description: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    tags: tuple[str, ...] = ()
    # The security groups (names or ids) of the ports made for the servers; none named: the
    # project's default group, which the network service gives a new port.
    security_groups: tuple[str, ...] = ()
    # Answer the reservation id the servers share instead of the first server.
    return_reservation_id: bool = False
    # What the guest is given (``guest_input``): files, user data, a config drive, and whether
    # it grows its root partition to the disk (OS-DCF:diskConfig AUTO).
    personality: tuple[guest_input.InjectedFile, ...] = ()
    user_data: str | None = None
    config_drive: bool = False
    auto_disk_config: bool = False

    def names(self) -> list[str]:
        """One display name per server: ``name-1``, ``name-2``... when several are made."""
        if self.max_count == 1:
            return [self.name]
        return [f"{self.name}-{index}" for index in range(1, self.max_count + 1)]


def parse_create(body: Mapping[str, Any], networks_required: bool) -> ServerRequest:
    """The create body ``{"server": {...}, "os:scheduler_hints": {...}}``, its shape already
    valid against the schema of its microversion (``berth.compute.api.schemas.server``: which
    keys, ``networks`` given from 2.37); ``networks_required`` from 2.37, where ``networks``
    may also be ``"auto"`` or ``"none"``."""
    server: dict[str, Any] = body["server"]
    guest_input.no_trusted_certificates(server)
    min_count = _count(server, "min_count", 1)
    max_count = _count(server, "max_count", min_count)
    if min_count > max_count:
        raise exceptions.BadRequest("Invalid input: min_count must be <= max_count.")
    image_ref = _image_of_block_devices(server.get("block_device_mapping_v2"))
    return ServerRequest(
        name=server_name(server["name"]),
        flavor_ref=_reference(server, "flavorRef"),
        image_ref=image_ref or _reference(server, "imageRef"),
        networks=_networks(server, networks_required),
        availability_zone=_optional_string(server.get("availability_zone"), "availability_zone"),
        min_count=min_count,
        max_count=max_count,
        metadata=server_metadata.parse(server.get("metadata", {})),
        key_name=_optional_string(server.get("key_name"), "key_name"),
        hints=_hints(_scheduler_hints(body)),
        admin_pass=admin_pass(server.get("adminPass")),
        description=description(server.get("description")),
        access_ip_v4=access_ip(server.get("accessIPv4"), 4),
        access_ip_v6=access_ip(server.get("accessIPv6"), 6),
        tags=tuple(server_tags.parse_tags(server.get("tags", []))),
        security_groups=_security_groups(server.get("security_groups")),
        return_reservation_id=_boolean(
            server.get("return_reservation_id", False), "return_reservation_id"
        ),
        personality=guest_input.personality(server.get("personality")),
        user_data=guest_input.user_data(server.get("user_data")),
        config_drive=guest_input.config_drive(server.get("config_drive")),
        auto_disk_config=bool(guest_input.disk_config(server.get("OS-DCF:diskConfig"))),
    )


def server_name(value: Any) -> str:
    """A server's display name: a string of 1 to 255 characters."""
    return _string(value, "name", minimum=1)


def description(value: Any) -> str | None:
    """A server's description (2.19): up to 255 characters, or null for none."""
    return None if value is None else _string(value, "description")


def access_ip(value: Any, version: int) -> str | None:
    """An accessIPv4 or accessIPv6 address (what the user says reaches the server; nothing
    routes it), normalised; null or "" for none."""
    if value is None or value == "":
        return None
    what = f"accessIPv{version}"
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        address = ipaddress.ip_address(value)
    except ValueError:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': {value!r} is not an IPv{version} address."
        ) from None
    if address.version != version:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': {value!r} is not an IPv{version} address."
        )
    return str(address)


def _security_groups(groups: Any) -> tuple[str, ...]:
    """``[{"name": "web"}, ...]``: the names (or ids), each once."""
    if groups is None:
        return ()
    if not isinstance(groups, list) or not all(
        isinstance(group, dict) and isinstance(group.get("name"), str) for group in groups
    ):
        raise exceptions.BadRequest(
            "Invalid input for field 'security_groups': a list of {\"name\": ...} objects."
        )
    return tuple(dict.fromkeys(group["name"] for group in groups))


def _image_of_block_devices(mappings: Any) -> str | None:
    """The image of a block device mapping that only says "the root disk is this image, on the
    host" (what clients send for an image boot); anything with volumes is refused, as Berth has
    no volume service."""
    if mappings is None or mappings == []:
        return None
    if not isinstance(mappings, list) or not all(isinstance(m, dict) for m in mappings):
        raise exceptions.BadRequest(
            "Invalid input for field 'block_device_mapping_v2': a list of objects."
        )
    local_images = [
        m for m in mappings
        if m.get("source_type") == "image" and m.get("destination_type", "local") == "local"
        and str(m.get("boot_index", 0)) == "0" and m.get("uuid")
    ]  # fmt: skip
    if len(local_images) != 1 or len(mappings) != 1:
        raise exceptions.BadRequest(
            "Block device mappings other than booting from an image on the host's disk are not "
            "supported: Berth has no volume service."
        )
    return str(local_images[0]["uuid"])


def _string(value: Any, what: str, minimum: int = 0, maximum: int = _NAME_LENGTH) -> str:
    if not isinstance(value, str):
        raise exceptions.BadRequest(f"Invalid input for field '{what}': a string is expected.")
    if not minimum <= len(value) <= maximum:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': between {minimum} and {maximum} characters."
        )
    return value


def _optional_string(value: Any, what: str) -> str | None:
    return None if value is None else _string(value, what, minimum=1)


def _reference(server: Mapping[str, Any], what: str) -> str:
    """A flavor or image id; an href ``.../flavors/ID`` names its last segment."""
    value = server.get(what)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise exceptions.BadRequest(f"Invalid input for field '{what}': an id is required.")
    return value.rstrip("/").rsplit("/", 1)[-1]


def _count(server: Mapping[str, Any], what: str, default: int) -> int:
    value = server.get(what, default)
    if isinstance(value, str) and _is_digits(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise exceptions.BadRequest(f"Invalid input for field '{what}': an integer >= 1.")
    if value > MAX_COUNT:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': at most {MAX_COUNT} servers per request."
        )
    return value


def _boolean(value: Any, what: str) -> bool:
    """A JSON boolean, or one of the strings upstream's schemas take for one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise exceptions.BadRequest(f"Invalid input for field '{what}': a boolean is expected.")


def _is_digits(value: str) -> bool:
    """ASCII digits only (``str.isdigit`` also takes "²", which ``int`` refuses)."""
    return value.isascii() and value.isdigit()


def _uuid(value: Any, what: str) -> str:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            uuidlib.UUID(value)
            return value
    raise exceptions.BadRequest(f"Invalid input for field '{what}': {value!r} is not a UUID.")


def _networks(server: Mapping[str, Any], required: bool) -> Networks:
    if "networks" not in server:
        return "auto"
    value = server["networks"]
    if isinstance(value, str):
        if required and value in ("auto", "none"):
            return value
        raise exceptions.BadRequest(
            "Invalid input for field 'networks': a list of networks or ports"
            + (', "auto" or "none".' if required else " (auto and none need 2.37).")
        )
    if not isinstance(value, list):
        raise exceptions.BadRequest("Invalid input for field 'networks': a list is expected.")
    if not value:
        if required:
            raise exceptions.BadRequest(
                "Invalid input for field 'networks': an empty list; ask for \"none\" instead."
            )
        return "auto"
    entries = [_network(entry) for entry in value]
    ports = [entry["port"] for entry in entries if "port" in entry]
    if len(set(ports)) != len(ports):
        raise exceptions.BadRequest("Invalid input for field 'networks': a port is given twice.")
    return entries


def _network(entry: Any) -> dict[str, str]:
    if not isinstance(entry, dict) or set(entry) - _NETWORK_KEYS:
        raise exceptions.BadRequest(
            "Invalid input for field 'networks': each entry is {\"uuid\": ...} or "
            '{"port": ...}, with "fixed_ip" beside a uuid.'
        )
    if ("uuid" in entry) == ("port" in entry):
        raise exceptions.BadRequest(
            "Invalid input for field 'networks': each entry gives exactly one of uuid and port."
        )
    if "port" in entry:
        if "fixed_ip" in entry:
            raise exceptions.BadRequest(
                "Invalid input for field 'networks': fixed_ip goes with a uuid, not a port."
            )
        return {"port": _uuid(entry["port"], "networks/port")}
    parsed = {"uuid": _uuid(entry["uuid"], "networks/uuid")}
    if "fixed_ip" in entry:
        try:
            if not isinstance(entry["fixed_ip"], str):
                raise ValueError(entry["fixed_ip"])
            parsed["fixed_ip"] = str(ipaddress.ip_address(entry["fixed_ip"]))
        except ValueError:
            raise exceptions.BadRequest(
                f"Invalid input for field 'networks/fixed_ip': {entry['fixed_ip']!r} is not an "
                "IP address."
            ) from None
    return parsed


def _scheduler_hints(body: Mapping[str, Any]) -> dict[str, Any]:
    for key in _HINTS_KEYS:
        if key in body:
            if not isinstance(body[key], dict):
                raise exceptions.BadRequest(f"Invalid input for '{key}': an object is expected.")
            return dict(body[key])
    return {}


def _hints(hints: Mapping[str, Any]) -> SchedulerHints:
    """``group``, ``same_host``, ``different_host`` and Berth's ``queue_timeout``; other hints
    are for filters Berth does not have, and are ignored."""
    group = hints.get("group")
    return SchedulerHints(
        group=None if group is None else _uuid(group, "os:scheduler_hints/group"),
        same_host=_uuids(hints.get("same_host"), "os:scheduler_hints/same_host"),
        different_host=_uuids(hints.get("different_host"), "os:scheduler_hints/different_host"),
        queue_timeout=queueing.parse_hint(hints.get(queueing.QUEUE_TIMEOUT_HINT)),
    )


def _uuids(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list):
        raise exceptions.BadRequest(f"Invalid input for '{what}': a uuid or a list of uuids.")
    return tuple(dict.fromkeys(_uuid(item, what) for item in values))


def admin_pass(value: Any) -> str:
    """The password asked for, or a new random one."""
    if value is None:
        return random_text(_PASSWORD_ALPHABET, 12)
    return _string(value, "adminPass")


def random_text(alphabet: str, length: int) -> str:
    """``length`` characters, each drawn uniformly from ``alphabet`` (as ``secrets.choice``
    draws them, which reads the system's randomness once per character: a read for all here).
    A byte maps to a character only below the largest multiple of the alphabet's size, so
    that none is likelier than another."""
    below = 256 - 256 % len(alphabet)
    drawn: list[str] = []
    while len(drawn) < length:
        drawn += [alphabet[b % len(alphabet)] for b in secrets.token_bytes(2 * length) if b < below]
    return "".join(drawn[:length])


# -- listing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListQuery:
    """A server list's filters and page. ``project_id`` None means every project's."""

    project_id: str | None
    # A regular expression searched in the name, case-insensitively.
    name: re.Pattern[str] | None = None
    # Regular expressions matched at the start of an IPv4 (ip) or IPv6 (ip6) fixed address.
    ip: re.Pattern[str] | None = None
    ip6: re.Pattern[str] | None = None
    # Changed (updated, else created) at or after this naive UTC time.
    changes_since: dt.datetime | None = None
    statuses: frozenset[str] | None = None
    host: str | None = None
    image: str | None = None
    flavor: str | None = None
    reservation_id: str | None = None
    tags: server_tags.TagFilter = field(default_factory=server_tags.TagFilter)
    limit: int = MAX_LIMIT
    marker: str | None = None
    # Before 2.38 an unknown status answers an empty list instead of a 400.
    matches_nothing: bool = False
    echo: list[tuple[str, str]] = field(default_factory=list)


def parse_list_query(
    items: Iterable[tuple[str, str]],
    project_id: str,
    is_admin: bool,
    statuses: frozenset[str],
    unknown_status_is_error: bool,
    tag_filters: bool = False,
    changes_since: dt.datetime | None = None,
) -> ListQuery:
    """Filters a project may use: ``name`` (a regular expression searched in the name),
    ``ip`` and ``ip6`` (regular expressions matched at the start of a fixed address),
    ``changes-since`` (parsed by the caller), ``status`` (repeatable), ``image``,
    ``flavor``, ``reservation_id``, ``limit``, ``marker``, and with ``tag_filters`` (2.26) ``tags``, ``tags-any``,
    ``not-tags``, ``not-tags-any``; an admin also ``host`` and ``all_tenants`` (with
    ``project_id``/``tenant_id`` to narrow). Other parameters are ignored, as upstream does."""
    items = list(items)
    query: dict[str, list[str]] = {}
    for key, value in items:
        query.setdefault(key, []).append(value)

    def last(key: str) -> str | None:
        return query[key][-1] if key in query else None

    everyone = "all_tenants" in query and (last("all_tenants") or "").lower() not in _FALSE
    if everyone and not is_admin:
        raise exceptions.Forbidden("Only an administrator may list the servers of every project.")
    asked = frozenset(value.upper() for value in query.get("status", []))
    unknown = asked - statuses
    if unknown and unknown_status_is_error:
        raise exceptions.BadRequest(f"Invalid status value: {', '.join(sorted(unknown))}.")
    return ListQuery(
        project_id=(last("project_id") or last("tenant_id")) if everyone else project_id,
        name=_pattern(last("name"), "name", re.IGNORECASE),
        ip=_pattern(last("ip"), "ip"),
        ip6=_pattern(last("ip6"), "ip6"),
        changes_since=changes_since,
        statuses=asked or None,
        host=last("host") if is_admin else None,
        image=last("image"),
        flavor=last("flavor"),
        reservation_id=last("reservation_id"),
        tags=server_tags.TagFilter.from_query(
            {key: values[-1] for key, values in query.items()} if tag_filters else {}
        ),
        limit=_limit(last("limit")),
        marker=last("marker"),
        matches_nothing=bool(unknown),
        echo=[(key, value) for key, value in items if key != "marker"],
    )


def _pattern(value: str | None, what: str, flags: int = 0) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(value, flags)
    except re.error as exc:
        raise exceptions.BadRequest(
            f"Invalid input for query parameter '{what}': not a regular expression ({exc})."
        ) from None


def _limit(value: str | None) -> int:
    if value is None:
        return MAX_LIMIT
    if not _is_digits(value):
        raise exceptions.BadRequest("Invalid input for query parameter 'limit': an integer >= 0.")
    return min(int(value), MAX_LIMIT)
