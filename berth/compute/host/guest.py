"""A simulated guest: what the API can learn of a server's operating system.

A real guest has a console that the hypervisor logs (``os-getConsoleOutput`` reads it), an
admin password that a guest agent sets (``changePassword``), the files and user data it was
booted with (``personality``, ``user_data``), a config drive, and may be booted from a rescue
image. The simulated driver keeps one :class:`Guest` per server it runs and tells it what
happens to it (boots, power changes, rescue); the guest writes to its console what a Linux
guest with cloud-init would, so a console log tells the server's life.
"""

from __future__ import annotations

import base64
import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The console keeps this many lines, as a hypervisor's rotated console log does.
CONSOLE_LINES = 1000

# Power states (Nova's numbers).
_RUNNING, _PAUSED, _SHUTDOWN, _SUSPENDED = 1, 3, 4, 7


class GuestNotRunning(Exception):
    """The guest is not running, so nothing inside it can act (a password change)."""


@dataclass(frozen=True)
class Provisioning:
    """What a spawn puts in a new guest: the image it boots, its admin password, the files to
    inject (path -> contents), user data, and whether it gets a config drive (with its name and
    metadata on it)."""

    image_ref: str = ""
    name: str = ""
    admin_password: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)
    user_data: bytes | None = None
    config_drive: bool = False
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Guest:
    uuid: str
    host: str
    image_ref: str = ""
    admin_password: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    user_data: bytes | None = None
    # The config drive's files (path -> contents), None without one.
    config_drive: dict[str, bytes] | None = None
    # The image the guest runs from while rescued.
    rescue_image: str | None = None
    boots: int = 0
    console: deque[str] = field(default_factory=lambda: deque(maxlen=CONSOLE_LINES))

    def boot(self, given: Provisioning) -> None:
        """A first boot: the image, then what cloud-init does with what it was given."""
        self.image_ref = given.image_ref
        self.admin_password = given.admin_password
        self.files = dict(given.files)
        self.user_data = given.user_data
        self.config_drive = _config_drive(self.uuid, given) if given.config_drive else None
        self._start(self.image_ref)
        if self.config_drive is not None:
            self._log("cloud-init: found a config drive (config-2)")
        for path, contents in sorted(self.files.items()):
            self._log(f"cloud-init: wrote {path} ({len(contents)} bytes)")
        if self.user_data is not None:
            self._log(f"cloud-init: ran user data ({len(self.user_data)} bytes)")
        if self.admin_password is not None:
            self._log("cloud-init: set the password of root")
        self._log(f"{given.name or self.uuid} login:")

    def power_changed(self, was: int | None, now: int) -> None:
        """What the console shows when the hypervisor changes the guest's power."""
        if now == _RUNNING:
            if was == _RUNNING:
                self._log("reboot: Restarting system")
            if was in (_PAUSED, _SUSPENDED):
                self._log("PM: resumed" if was == _SUSPENDED else "(unpaused)")
                return
            self._start(self.rescue_image or self.image_ref)
            self._log("login:")
        elif now == _SHUTDOWN and was != _SHUTDOWN:
            self._log("reboot: Power down")
        elif now == _SUSPENDED:
            self._log("PM: suspend entry (s2idle)")

    def rescue(self, image_ref: str, admin_password: str) -> None:
        self._log("reboot: Restarting system")
        self.rescue_image = image_ref
        self._start(image_ref)
        self._log(f"rescue: the server's disk is attached as /dev/vdb; image {image_ref}")
        self._log("cloud-init: set the password of root")
        self._log("login:")

    def unrescue(self) -> None:
        self._log("reboot: Restarting system")
        self.rescue_image = None
        self._start(self.image_ref)
        self._log("login:")

    def set_admin_password(self, password: str) -> None:
        self.admin_password = password
        self._log("guest agent: set the password of root")

    def console_text(self) -> str:
        return "\n".join(self.console)

    def _start(self, image_ref: str) -> None:
        self.boots += 1
        self._log(f"SeaBIOS (version simulated) on {self.host}")
        self._log(f"Booting from image {image_ref or 'none'}")
        self._log("Linux version 6.1.0 (simulated)")
        self._log("Run /sbin/init as init process")

    def _log(self, line: str) -> None:
        self.console.append(f"[{len(self.console):6d}] {line}")


def _config_drive(uuid: str, given: Provisioning) -> dict[str, bytes]:
    """The files of an OpenStack config drive (``openstack/latest``) as cloud-init reads them."""
    meta: dict[str, Any] = {
        "uuid": uuid,
        "name": given.name,
        "hostname": given.name,
        "meta": dict(given.metadata),
        "files": [{"path": path} for path in sorted(given.files)],
    }
    if given.admin_password is not None:
        meta["admin_pass"] = given.admin_password
    drive = {"openstack/latest/meta_data.json": json.dumps(meta, sort_keys=True).encode()}
    if given.user_data is not None:
        drive["openstack/latest/user_data"] = given.user_data
    return drive


def provisioning_from(row: Mapping[str, Any], injected: Mapping[str, Any] | None) -> Provisioning:
    """What a spawn of the instance ``row`` gives its guest; ``injected`` is what the API asked
    to inject at this spawn (``{"admin_pass": ..., "files": [{"path", "contents"}]}``, contents
    base64), None for a spawn that injects nothing (a move)."""
    user_data = row.get("user_data")
    return Provisioning(
        image_ref=str(row.get("image_ref") or ""),
        name=str(row.get("display_name") or ""),
        admin_password=(injected or {}).get("admin_pass"),
        files={
            str(entry["path"]): base64.b64decode(entry["contents"])
            for entry in (injected or {}).get("files", [])
        },
        user_data=None if user_data is None else base64.b64decode(user_data),
        config_drive=bool(row.get("config_drive")),
        metadata=dict(row.get("metadata") or {}),
    )
