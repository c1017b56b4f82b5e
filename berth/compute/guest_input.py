"""What a create, rebuild, resize or update may say of the guest, checked and parsed:
``personality`` files, ``user_data``, ``config_drive`` and ``OS-DCF:diskConfig``.

Pure functions, as :mod:`server_input`: each refusal is a BadRequest naming the field. The
personality limits are a project's quotas (``injected_files``,
``injected_file_path_bytes``, ``injected_file_content_bytes``), checked by
:func:`check_personality` against the limits the caller read; going over one is a 403, as
Nova's.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from berth.compute import exceptions, quotas

# Nova's limit on user data, base64 as given.
USER_DATA_LENGTH = 65535
_DISK_CONFIGS = {"AUTO": True, "MANUAL": False}
_TRUE = frozenset({"1", "true", "t", "yes", "on", "y"})
_FALSE = frozenset({"0", "false", "f", "no", "off", "n", ""})


@dataclass(frozen=True)
class InjectedFile:
    """A personality file: where the guest gets it and its contents, base64 as given."""

    path: str
    contents: str

    def size(self) -> int:
        return len(base64.b64decode(self.contents))

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "contents": self.contents}


def personality(value: Any) -> tuple[InjectedFile, ...]:
    """``[{"path": "/etc/motd", "contents": "<base64>"}, ...]``."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise exceptions.BadRequest("Invalid input for field 'personality': a list is expected.")
    files = []
    for entry in value:
        if (
            not isinstance(entry, dict)
            or set(entry) - {"path", "contents"}
            or not isinstance(entry.get("path"), str)
            or not isinstance(entry.get("contents"), str)
        ):
            raise exceptions.BadRequest(
                "Invalid input for field 'personality': each file is "
                '{"path": ..., "contents": ...} with string values.'
            )
        files.append(InjectedFile(entry["path"], _base64(entry["contents"], "personality")))
    return tuple(files)


def check_personality(limits: Mapping[str, int], files: Sequence[InjectedFile]) -> None:
    """The project's limits on injected files hold, or QuotaExceeded (a 403)."""
    if not files:
        return
    most = limits[quotas.INJECTED_FILES]
    if 0 <= most < len(files):
        raise quotas.QuotaExceeded(
            f"Personality file limit exceeded: {len(files)} files, the limit is {most}."
        )
    longest = limits[quotas.INJECTED_FILE_PATH_BYTES]
    largest = limits[quotas.INJECTED_FILE_CONTENT_BYTES]
    for injected in files:
        if 0 <= longest < len(injected.path.encode()):
            raise quotas.QuotaExceeded(
                f"Personality file path exceeds maximum {longest} bytes: {injected.path!r}."
            )
        if 0 <= largest < injected.size():
            raise quotas.QuotaExceeded(
                f"Personality file content exceeds maximum {largest} bytes: {injected.path!r}."
            )


def user_data(value: Any) -> str | None:
    """Base64 text of at most 65535 characters, or null for none."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > USER_DATA_LENGTH:
        raise exceptions.BadRequest(
            f"Invalid input for field 'user_data': base64 text of at most {USER_DATA_LENGTH} "
            "characters."
        )
    return _base64(value, "user_data")


def no_trusted_certificates(server: Mapping[str, Any]) -> None:
    """A create or rebuild's ``trusted_image_certificates`` (2.63): null or absent only. Berth
    verifies no image signatures, so a list is refused, as Nova refuses one when it is not
    configured to verify them."""
    if server.get("trusted_image_certificates"):
        raise exceptions.BadRequest(
            "Image signature certificate validation is not enabled: Berth verifies no image "
            "signatures, so trusted_image_certificates must be null."
        )


def disk_config(value: Any) -> bool | None:
    """``"AUTO"`` (true) or ``"MANUAL"`` (false); None when not given."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in _DISK_CONFIGS:
        raise exceptions.BadRequest(
            f"Invalid input for field 'OS-DCF:diskConfig': {value!r} is not AUTO or MANUAL."
        )
    return _DISK_CONFIGS[value]


def config_drive(value: Any) -> bool:
    """A boolean, or a string upstream takes for one ("" and null: no config drive)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise exceptions.BadRequest("Invalid input for field 'config_drive': a boolean is expected.")


def _base64(value: str, what: str) -> str:
    """``value`` if it decodes as base64. As leniently as Nova's check: characters outside the
    alphabet (the newlines of wrapped base64) are skipped, the padding must be right."""
    try:
        base64.b64decode(value)
    except (binascii.Error, ValueError):
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': the contents are not valid base64."
        ) from None
    return value
