"""The simulated guest and what a client may give it: the console's story, the tail of a log,
and the parsing and limits of personality files, user data, config drive and disk config."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from berth.compute import exceptions, guest_actions, guest_input, quotas
from berth.compute.host.driver import SimulatedDriver
from berth.compute.host.guest import CONSOLE_LINES, GuestNotRunning, Provisioning

VM = "5e2b9f5e-0000-4000-8000-000000000009"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_guest_boots_with_what_it_was_given_and_its_console_says_so() -> None:
    driver = SimulatedDriver("h1")
    driver.spawn(VM, Provisioning(
        image_ref="img", name="vm", admin_password="pw", files={"/etc/motd": b"hi"},
        user_data=b"#!/bin/sh", config_drive=True, metadata={"k": "v"},
    ))  # fmt: skip
    guest = driver.guest(VM)
    assert guest is not None
    assert (guest.admin_password, guest.files, guest.user_data) == (
        "pw",
        {"/etc/motd": b"hi"},
        b"#!/bin/sh",
    )
    assert guest.config_drive is not None
    meta = json.loads(guest.config_drive["openstack/latest/meta_data.json"])
    assert (meta["admin_pass"], meta["meta"], meta["files"]) == (
        "pw",
        {"k": "v"},
        [{"path": "/etc/motd"}],
    )
    console = driver.console_output(VM)
    for line in ("Booting from image img", "found a config drive", "wrote /etc/motd (2 bytes)",
                 "ran user data (9 bytes)", "vm login:"):  # fmt: skip
        assert line in console


def test_power_changes_rescue_and_password_are_written_to_the_console() -> None:
    driver = SimulatedDriver("h1")
    driver.spawn(VM, Provisioning(image_ref="img"))
    driver.set_power(VM, 1)  # a reboot
    driver.set_power(VM, 4)
    with pytest.raises(GuestNotRunning):
        driver.set_admin_password(VM, "x")
    driver.rescue(VM, "rescue-img", "rescue-pw")
    assert VM in driver.running
    driver.set_admin_password(VM, "new")
    driver.unrescue(VM)
    guest = driver.guest(VM)
    assert guest is not None and guest.rescue_image is None and guest.admin_password == "new"
    assert guest.boots == 4
    lines = [line.split("] ", 1)[1] for line in driver.console_output(VM).split("\n")]
    story = [line for line in lines if line.startswith(("reboot:", "Booting", "rescue:", "guest"))]
    assert story == [
        "Booting from image img", "reboot: Restarting system", "Booting from image img",
        "reboot: Power down", "reboot: Restarting system", "Booting from image rescue-img",
        "rescue: the server's disk is attached as /dev/vdb; image rescue-img",
        "guest agent: set the password of root", "reboot: Restarting system",
        "Booting from image img",
    ]  # fmt: skip
    driver.destroy(VM)
    assert driver.console_output(VM) == "" and driver.guest(VM) is None


def test_the_console_keeps_its_last_lines() -> None:
    driver = SimulatedDriver("h1")
    driver.spawn(VM)
    for _ in range(CONSOLE_LINES):
        driver.set_power(VM, 1)
    assert len(driver.console_output(VM).split("\n")) == CONSOLE_LINES


@pytest.mark.parametrize(
    ("length", "expected"),
    [(None, "a\nb\nc"), (0, ""), (1, "c"), (2, "b\nc"), (5, "a\nb\nc")],
)
def test_tail(length: int | None, expected: str) -> None:
    assert guest_actions.tail("a\nb\nc", length) == expected


def test_personality_parsing() -> None:
    files = guest_input.personality([{"path": "/a", "contents": _b64(b"xyz")}])
    assert [(f.path, f.size()) for f in files] == [("/a", 3)]
    assert guest_input.personality(None) == ()
    for bad in ("x", [{"path": "/a"}], [{"path": 1, "contents": ""}],
                [{"path": "/a", "contents": "abc"}], [{"path": "/a", "contents": "", "mode": 1}]):  # fmt: skip
        with pytest.raises(exceptions.BadRequest):
            guest_input.personality(bad)


def _limits(**given: int) -> dict[str, int]:
    return {
        quotas.INJECTED_FILES: 2,
        quotas.INJECTED_FILE_PATH_BYTES: 8,
        quotas.INJECTED_FILE_CONTENT_BYTES: 4,
        **given,
    }


@pytest.mark.parametrize(
    ("files", "limits", "words"),
    [
        ([("/a", b""), ("/b", b""), ("/c", b"")], {}, "file limit exceeded"),
        ([("/toolong!", b"")], {}, "path exceeds"),
        ([("/a", b"12345")], {}, "content exceeds"),
    ],
)
def test_personality_limits_are_403s(
    files: list[tuple[str, bytes]], limits: dict[str, int], words: str
) -> None:
    parsed = guest_input.personality([{"path": p, "contents": _b64(c)} for p, c in files])
    with pytest.raises(quotas.QuotaExceeded, match=words):
        guest_input.check_personality(_limits(**limits), parsed)


def test_unlimited_personality() -> None:
    parsed = guest_input.personality([{"path": "/" + "p" * 300, "contents": _b64(b"x" * 99)}] * 9)
    unlimited = _limits(**dict.fromkeys(_limits(), -1))
    guest_input.check_personality(unlimited, parsed)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), (True, True), ("true", True), ("False", False), ("", False), ("1", True)],
)
def test_config_drive(value: Any, expected: bool) -> None:
    assert guest_input.config_drive(value) is expected


def test_user_data_and_disk_config() -> None:
    assert guest_input.user_data(_b64(b"hi")) == _b64(b"hi")
    # Wrapped base64 (as the base64 tool writes it) is base64 too.
    wrapped = _b64(b"x" * 100)
    assert guest_input.user_data(wrapped[:76] + "\n" + wrapped[76:]) is not None
    assert guest_input.user_data(None) is None
    assert (guest_input.disk_config("AUTO"), guest_input.disk_config("MANUAL")) == (True, False)
    assert guest_input.disk_config(None) is None
    for bad_call in (
        lambda: guest_input.user_data("abc"),
        lambda: guest_input.user_data("A" * 65536),
        lambda: guest_input.user_data(5),
        lambda: guest_input.disk_config("auto"),
        lambda: guest_input.config_drive("maybe"),
        lambda: guest_input.config_drive(3),
    ):
        with pytest.raises(exceptions.BadRequest):
            bad_call()
