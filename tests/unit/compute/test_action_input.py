"""The server actions' and the server update's input, parsed and refused as Nova's API does."""

from __future__ import annotations

from typing import Any

import pytest

from berth.compute import action_input
from berth.compute.exceptions import BadRequest


@pytest.mark.parametrize(
    ("argument", "change"),
    [
        ({"type": "SOFT"}, "reboot_soft"),
        ({"type": "soft"}, "reboot_soft"),
        ({"type": "Hard"}, "reboot_hard"),
        ({"type": "HARD"}, "reboot_hard"),
    ],
)
def test_reboot_types_in_nova_s_spellings(argument: dict[str, str], change: str) -> None:
    assert action_input.reboot_change(argument) == change


@pytest.mark.parametrize(
    "argument",
    [None, {}, "HARD", 5, [], {"type": "hArD"}, {"type": "WARM"}, {"type": "HARD", "x": 1}],
)
def test_other_reboot_arguments_are_refused(argument: Any) -> None:
    with pytest.raises(BadRequest, match="reboot"):
        action_input.reboot_change(argument)


def test_rebuild_parses_what_changes_under_build_request_keys() -> None:
    request = action_input.rebuild(
        {
            "imageRef": "http://glance/images/abc",
            "name": "n",
            "metadata": {"k": "v"},
            "adminPass": "pw",
            "accessIPv6": "0000:0000:0000:0000:0000:babe:220.12.22.2",
            "description": None,
            "key_name": None,
            "preserve_ephemeral": True,
            "trusted_image_certificates": None,
        }
    )
    assert (request.image_ref, request.admin_pass) == ("abc", "pw")
    assert request.changes == {
        "name": "n",
        "metadata": {"k": "v"},
        "access_ip_v6": "::babe:dc0c:1602",
        "description": None,
        "key_name": None,
    }
    assert len(action_input.rebuild({"imageRef": "abc"}).admin_pass) == 12


# Which keys a microversion takes, and their types, are the request schema's (tests/unit/
# test_request_validation.py); what needs parsing is refused here.
@pytest.mark.parametrize(
    ("argument", "words"),
    [
        ({"imageRef": "  "}, "imageRef"),
        ({"imageRef": "i", "name": ""}, "name"),
        ({"imageRef": "i", "metadata": {"k": 1}}, "metadata"),
        ({"imageRef": "i", "accessIPv4": "1.1.1.1.1.1"}, "accessIPv4"),
        ({"imageRef": "i", "user_data": "not base64!"}, "user_data"),
        ({"imageRef": "i", "trusted_image_certificates": ["c"]}, "trusted_image_certificates"),
    ],
)
def test_rebuild_refusals(argument: dict[str, Any], words: str) -> None:
    with pytest.raises(BadRequest, match=words):
        action_input.rebuild(argument)


def test_update_takes_name_access_addresses_and_from_2_19_a_description() -> None:
    body = {"server": {"name": "n", "accessIPv4": "", "accessIPv6": "::1", "description": "d"}}
    assert action_input.update(body, with_description=True) == {
        "name": "n",
        "access_ip_v4": None,
        "access_ip_v6": "::1",
        "description": "d",
    }
    with pytest.raises(BadRequest, match="description"):
        action_input.update(body, with_description=False)
    with pytest.raises(BadRequest, match="description"):
        action_input.update({"server": {"description": "d" * 256}}, with_description=True)
    with pytest.raises(BadRequest, match="'server'"):
        action_input.update({"name": "n"}, with_description=True)
