"""What a flavor may be: the checks on a new flavor, its description and its extra specs.

A new flavor's amounts may come as integers or as strings of digits (clients send both)::

    {"name": "m1.small", "id": "2", "ram": 2048, "vcpus": "1", "disk": 20,
     "OS-FLV-EXT-DATA:ephemeral": 0, "swap": "", "rxtx_factor": 1.0,
     "os-flavor-access:is_public": true, "description": "from 2.55"}

Extra specs are checked loosely, only where the scheduler reads them (see
``berth.compute.scheduler.flavor_groups``)::

    resources[<S>]:<RC>            a non-negative integer
    trait[<S>]:<TRAIT>             required | forbidden
    group_policy                   none | isolate
    berth:queue_timeout            seconds a server may wait for room (berth.compute.queueing)
    aggregate_instance_extra_specs:<k>, hw:*, anything else: any string of up to 255 characters
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from berth.compute import exceptions
from berth.compute.queueing import QUEUE_TIMEOUT_SPEC, timeout_problem
from berth.compute.scheduler.flavor_groups import GROUP_POLICIES, SUFFIX

# What a database integer column holds.
MAX_INT: Final = 2**31 - 1
MAX_DESCRIPTION: Final = 65535
_FLAVOR_ID: Final = re.compile(r"(?! )[a-zA-Z0-9. _-]+(?<! )")
_SPEC_KEY: Final = re.compile(r"[a-zA-Z0-9-_:. /]{1,255}")
_UPPER_NAME: Final = re.compile(r"[A-Z0-9_]+")
_AMOUNT: Final = re.compile(r"[0-9]{1,10}")
_TRUE: Final = frozenset({"true", "1", "yes", "on", "y", "t"})
_FALSE: Final = frozenset({"false", "0", "no", "off", "n", "f"})

EPHEMERAL: Final = "OS-FLV-EXT-DATA:ephemeral"
IS_PUBLIC: Final = "os-flavor-access:is_public"

# The columns a list may be sorted by (``sort_key``), as the reference names them.
SORT_KEYS: Final = frozenset(
    {
        "created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id", "is_public",
        "memory_mb", "name", "root_gb", "rxtx_factor", "swap", "updated_at", "vcpus",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class NewFlavor:
    flavorid: str
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int
    swap: int
    rxtx_factor: float
    is_public: bool
    description: str | None


def parse_new(body: Mapping[str, Any]) -> NewFlavor:
    """The flavor a create request describes, its shape already valid against the schema
    (``berth.compute.api.schemas.flavor``); BadRequest naming the first value wrong."""
    return NewFlavor(
        flavorid=_flavor_id(body.get("id")),
        name=check_name(body["name"]),
        vcpus=integer("vcpus", body["vcpus"], minimum=1),
        memory_mb=integer("ram", body["ram"], minimum=1),
        root_gb=integer("disk", body["disk"]),
        ephemeral_gb=integer(EPHEMERAL, body.get(EPHEMERAL, 0)),
        swap=0 if body.get("swap", "") == "" else integer("swap", body["swap"]),
        rxtx_factor=_rxtx_factor(body.get("rxtx_factor", 1.0)),
        is_public=boolean(IS_PUBLIC, body.get(IS_PUBLIC, True)),
        description=check_description(body.get("description")),
    )


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not 1 <= len(name) <= 255:
        raise exceptions.BadRequest("Invalid input for flavor: name must be 1 to 255 characters.")
    if name != name.strip():
        raise exceptions.BadRequest(
            "Invalid input for flavor: name must not begin or end with whitespace."
        )
    return name


def check_description(description: Any) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise exceptions.BadRequest(
            f"Invalid input for flavor: description must be a string of at most "
            f"{MAX_DESCRIPTION} characters, or null."
        )
    if any(ord(c) < 32 and c not in "\t\n\r" for c in description):
        raise exceptions.BadRequest(
            "Invalid input for flavor: description must not contain control characters."
        )
    return description


def _flavor_id(value: Any) -> str:
    if value is None:
        return str(uuid.uuid4())
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or len(value) > 255 or not _FLAVOR_ID.fullmatch(value):
        raise exceptions.BadRequest(
            "Invalid input for flavor: id must be 1 to 255 letters, digits, '.', '_', '-' or "
            "inner spaces."
        )
    return value


def integer(name: str, value: Any, minimum: int = 0) -> int:
    """An integer given as a number or a string of digits, within ``minimum`` and MAX_INT."""
    if isinstance(value, str) and _AMOUNT.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise exceptions.BadRequest(f"Invalid input for flavor: {name} must be an integer.")
    if not minimum <= value <= MAX_INT:
        raise exceptions.BadRequest(
            f"Invalid input for flavor: {name} must be >= {minimum} and <= {MAX_INT}."
        )
    return value


def _rxtx_factor(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise exceptions.BadRequest("Invalid input for flavor: rxtx_factor must be a number.")
    if not 0 < value <= 3.40282e38:
        raise exceptions.BadRequest("Invalid input for flavor: rxtx_factor must be > 0.")
    return float(value)


def boolean(name: str, value: Any) -> bool:
    """A boolean, or the strings clients use for one ("true", "False", "1", ...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise exceptions.BadRequest(f"Invalid input for flavor: {name} must be a boolean.")


def parse_is_public(value: str | None) -> bool | None:
    """An admin's ``is_public`` list filter: True when absent, None (every flavor) for 'none'."""
    if value is None:
        return True
    if value.lower() == "none":
        return None
    if value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise exceptions.BadRequest(f"Invalid is_public filter [{value}]")


# Extra specs


def check_extra_specs(specs: Any) -> dict[str, str]:
    """The extra specs of a request as strings; BadRequest for a malformed key or value."""
    if not isinstance(specs, dict):
        raise exceptions.BadRequest("Invalid input: extra_specs must be an object.")
    return {key: check_extra_spec(key, value) for key, value in specs.items()}


def check_extra_spec(key: Any, value: Any) -> str:
    if not isinstance(key, str) or not _SPEC_KEY.fullmatch(key):
        raise exceptions.BadRequest(
            f"Invalid extra spec key {key!r}: 1 to 255 letters, digits, '-', '_', ':', '.', ' ' "
            "or '/'."
        )
    if isinstance(value, bool | int | float):
        value = str(value)
    if not isinstance(value, str) or len(value) > 255:
        raise exceptions.BadRequest(
            f"Invalid extra spec {key}: the value must be a string of at most 255 characters."
        )
    problem = _spec_problem(key, value)
    if problem is not None:
        raise exceptions.BadRequest(f"Invalid extra spec {key}={value!r}: {problem}.")
    return value


def _spec_problem(key: str, value: str) -> str | None:
    if key == "group_policy":
        return None if value in GROUP_POLICIES else "group_policy is 'none' or 'isolate'"
    if key == QUEUE_TIMEOUT_SPEC:
        return timeout_problem(value)
    prefix, colon, name = key.partition(":")
    if not colon:
        return None
    for kind in ("resources", "trait"):
        if not prefix.startswith(kind):
            continue
        suffix = prefix.removeprefix(kind)
        if suffix and not SUFFIX.fullmatch(suffix):
            return f"{suffix!r} is not a request group suffix (1 to 64 of a-z, A-Z, 0-9, _, -)"
        if not _UPPER_NAME.fullmatch(name):
            what = "resource class" if kind == "resources" else "trait"
            return f"{name!r} is not a {what} name (A-Z, 0-9 and _)"
        if kind == "resources":
            if not _AMOUNT.fullmatch(value) or int(value) > MAX_INT:
                return "the amount must be a non-negative integer"
        elif value not in ("required", "forbidden"):
            return "a trait is 'required' or 'forbidden'"
    return None
