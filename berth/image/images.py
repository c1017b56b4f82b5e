"""What an image may be, who sees and changes it, and how a JSON patch changes it.

An image is its metadata: a few attributes (``name``, ``visibility``, ``min_ram``, ``min_disk``,
``disk_format``, ``container_format``, ``owner``) and free properties, string to string, which
the scheduler reads (``hw_architecture``, ``img_hv_type``, ``trait:CUSTOM_X`` = required...),
and its data, kept apart (``berth.image.data``). Its status follows Glance's lifecycle::

    queued --upload starts--> saving --data kept--> active <--deactivate/reactivate--> deactivated
       ^                        |
       +--upload fails----------+

The digests of its data (``checksum``, ``os_hash_algo``, ``os_hash_value``) are kept among its
properties under those names, which no client may set.

Who sees an image: everyone sees public and community images, a project its own, an admin all.
Only its owner's project or an admin changes or deletes one, and only an admin makes one public.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from berth.image import errors

VISIBILITIES: Final = ("public", "community", "shared", "private")
DISK_FORMATS: Final = (
    "ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop",
)  # fmt: skip
CONTAINER_FORMATS: Final = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
# Shown, never set by a client.
READ_ONLY: Final = frozenset(
    {
        "id", "status", "created_at", "updated_at", "size", "virtual_size", "checksum",
        "os_hash_algo", "os_hash_value", "self", "file", "schema", "direct_url", "locations",
    }
)  # fmt: skip
RESERVED: Final = frozenset({"deleted", "deleted_at", "location"})
# Attributes with columns of their own (the rest of a request's keys are properties).
COLUMNS: Final = ("name", "visibility", "min_ram", "min_disk", "disk_format", "container_format")
# Attributes the Image API has and Berth keeps at their defaults.
FIXED: Final = {"protected": False, "os_hidden": False, "tags": []}
# Kept among the properties once data arrives; read-only, shown as attributes.
DATA_DIGESTS: Final = ("checksum", "os_hash_algo", "os_hash_value")
_MAX_INT: Final = 2**31 - 1
_PATCH_OPS: Final = ("add", "replace", "remove")


@dataclass(frozen=True, slots=True)
class Caller:
    project_id: str
    is_admin: bool


def may_see(image: Mapping[str, Any], caller: Caller) -> bool:
    return (
        caller.is_admin
        or image["visibility"] in ("public", "community")
        or image["owner"] == caller.project_id
    )


def may_change(image: Mapping[str, Any], caller: Caller) -> bool:
    return caller.is_admin or image["owner"] == caller.project_id


def listed(
    images: Sequence[Mapping[str, Any]], caller: Caller, visibility: str | None
) -> list[Mapping[str, Any]]:
    """What a list shows: without ``visibility``, the caller's images and the public ones (an
    admin's: every image); ``all``, every image the caller may see; else those of that one."""
    if visibility is not None and visibility not in (*VISIBILITIES, "all"):
        raise errors.BadRequest(f"Invalid visibility value: {visibility}")
    seen = [image for image in images if may_see(image, caller)]
    if visibility == "all" or (visibility is None and caller.is_admin):
        return seen
    if visibility is None:
        return [
            i for i in seen if i["visibility"] != "community" or i["owner"] == caller.project_id
        ]
    return [image for image in seen if image["visibility"] == visibility]


# Creating


def new_image(body: Any, caller: Caller) -> tuple[str, dict[str, Any]]:
    """The id and the stored values of the image a create request describes."""
    if not isinstance(body, dict):
        raise errors.BadRequest("The request body must be a JSON object.")
    image_id = body.get("id")
    if image_id is None:
        image_id = str(uuid.uuid4())
    elif not isinstance(image_id, str) or not _is_uuid(image_id):
        raise errors.BadRequest(f"Invalid id {image_id!r}: an image id is a UUID.")
    values: dict[str, Any] = {
        "name": "",
        "status": "queued",
        "visibility": "shared",
        "owner": caller.project_id,
        "properties": {},
    }
    for name, value in body.items():
        if name == "id":
            continue
        _refuse_read_only(name)
        _set(values, name, value, caller)
    return image_id, values


def user_properties(image: Mapping[str, Any]) -> dict[str, str]:
    """The properties a client set (the data's digests left out)."""
    properties = image["properties"] or {}
    return {name: value for name, value in properties.items() if name not in DATA_DIGESTS}


def digests(image: Mapping[str, Any]) -> dict[str, str | None]:
    properties = image["properties"] or {}
    return {name: properties.get(name) for name in DATA_DIGESTS}


# Data and status


def check_upload(image: Mapping[str, Any]) -> None:
    """Data goes to a queued image only (once, as Glance: an image's data never changes)."""
    if image["status"] != "queued":
        raise errors.Conflict(
            f"Image status transition from {image['status']} to saving is not allowed: data is "
            "uploaded once, to a queued image."
        )


def check_download(image: Mapping[str, Any], caller: Caller) -> None:
    if image["status"] == "deactivated" and not caller.is_admin:
        raise errors.Forbidden(
            "The requested image has been deactivated. Image data download is forbidden."
        )


def deactivated(image: Mapping[str, Any]) -> str:
    """The status after deactivating; only an active image (or a deactivated one) may be."""
    if image["status"] not in ("active", "deactivated"):
        raise errors.Conflict(f"Not allowed to deactivate image in status '{image['status']}'")
    return "deactivated"


def reactivated(image: Mapping[str, Any]) -> str:
    if image["status"] not in ("active", "deactivated"):
        raise errors.Conflict(f"Not allowed to reactivate image in status '{image['status']}'")
    return "active"


# Changing with a JSON patch (application/openstack-images-v2.1-json-patch)


def patched(image: Mapping[str, Any], operations: Any, caller: Caller) -> dict[str, Any]:
    """The stored values after the patch's operations, applied in order::

    [{"op": "replace", "path": "/name", "value": "cirros"},
     {"op": "add", "path": "/hw_architecture", "value": "x86_64"},
     {"op": "remove", "path": "/trait:CUSTOM_X"}]
    """
    if not isinstance(operations, list):
        raise errors.BadRequest("A JSON patch is a list of operations.")
    values: dict[str, Any] = {name: image[name] for name in (*COLUMNS, "owner")}
    values["properties"] = dict(image["properties"] or {})
    for operation in operations:
        op, name = _operation(operation)
        _refuse_read_only(name)
        properties = values["properties"]
        is_attribute = name in COLUMNS or name == "owner" or name in FIXED
        if op == "remove":
            if is_attribute:
                raise errors.Forbidden(f"Attribute '{name}' cannot be removed.")
            if name not in properties:
                raise errors.Conflict(f"Property {name} does not exist.")
            del properties[name]
            continue
        if "value" not in operation:
            raise errors.BadRequest(f"Operation {op} on /{name} needs a 'value'.")
        if op == "replace" and not is_attribute and name not in properties:
            raise errors.Conflict(f"Property {name} does not exist.")
        _set(values, name, operation["value"], caller)
    return values


def _operation(operation: Any) -> tuple[str, str]:
    """``(op, attribute name)`` of one operation; its path is one JSON pointer segment."""
    if not isinstance(operation, dict) or operation.get("op") not in _PATCH_OPS:
        raise errors.BadRequest(f"Each operation has an 'op' of {list(_PATCH_OPS)}.")
    path = operation.get("path")
    if not isinstance(path, str) or not path.startswith("/") or path.count("/") != 1:
        raise errors.BadRequest(f"Invalid JSON pointer for this resource: {path!r}")
    name = path[1:].replace("~1", "/").replace("~0", "~")
    if not name:
        raise errors.BadRequest("Invalid JSON pointer for this resource: '/'")
    return str(operation["op"]), name


# One attribute or property


def _refuse_read_only(name: str) -> None:
    if name in READ_ONLY:
        raise errors.Forbidden(f"Attribute '{name}' is read-only.")
    if name in RESERVED:
        raise errors.Forbidden(f"Attribute '{name}' is reserved.")


def _set(values: dict[str, Any], name: str, value: Any, caller: Caller) -> None:
    if name == "name":
        if value is not None and (not isinstance(value, str) or len(value) > 255):
            raise errors.BadRequest("Invalid value for name: a string of up to 255 characters.")
        values["name"] = value or ""
    elif name == "visibility":
        if value not in VISIBILITIES:
            raise errors.BadRequest(f"Invalid visibility {value!r}: one of {list(VISIBILITIES)}.")
        if value == "public" and not caller.is_admin:
            raise errors.Forbidden("You are not authorized to complete publicize_image action.")
        values["visibility"] = value
    elif name in ("min_ram", "min_disk"):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_INT:
            raise errors.BadRequest(f"Invalid value for {name}: an integer >= 0.")
        values[name] = value
    elif name == "disk_format":
        values[name] = _choice(name, value, DISK_FORMATS, "raw")
    elif name == "container_format":
        values[name] = _choice(name, value, CONTAINER_FORMATS, "bare")
    elif name == "owner":
        if value is not None and (not isinstance(value, str) or len(value) > 255):
            raise errors.BadRequest("Invalid value for owner: a string of up to 255 characters.")
        owner = value or caller.project_id
        if owner != caller.project_id and not caller.is_admin:
            raise errors.Forbidden("You are not permitted to give an image to another project.")
        values["owner"] = owner
    elif name in FIXED:
        if value != FIXED[name]:
            raise errors.BadRequest(
                f"{name} is not supported by this image service; it is always {FIXED[name]}."
            )
    else:
        if len(name) > 255:
            raise errors.BadRequest("A property name has at most 255 characters.")
        if not isinstance(value, str) or len(value) > 65535:
            raise errors.BadRequest(f"Invalid value for property {name}: a string.")
        values["properties"] = {**values["properties"], name: value}


def _choice(name: str, value: Any, allowed: Sequence[str], default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise errors.BadRequest(f"Invalid value for {name}: {value!r}; one of {list(allowed)}.")
    return str(value)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
