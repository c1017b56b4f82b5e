"""/os-keypairs: import, generate, list, show and delete per microversion (2.1, 2.2's type and
status codes, 2.10's user_id for an admin, 2.35's pages); each user sees only their own; what a
create refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from berth.compute.service import ComputeService
from tests.functional.compute.conftest import client_for, version

# ssh-keygen -t ed25519 -C alice@laptop; ssh-keygen -l -E md5 says 56:45:cd:9c:...
ED25519 = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMf62eVG9mAKYT+r+Y2M30TMDehI671ZWnnbRjDBZPtv alice@laptop"
)
ED25519_MD5 = "56:45:cd:9c:cb:97:2a:93:c3:36:4e:62:d6:b0:d6:42"
LATEST = version(64)
ALICE = {"x-auth-token": "alice:demo"}
# Another user of the same project: key pairs are a user's, not a project's.
CAROL = {"x-auth-token": "carol:demo"}


# Over conftest's alice (a project of her own): here she shares her project with carol.
@pytest.fixture
def alice(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service, ALICE) as client:
        yield client


@pytest.fixture
def carol(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service, CAROL) as client:
        yield client


def _create(
    client: httpx.Client, headers: dict[str, str] = LATEST, status: int = 201, **keypair: Any
) -> Any:
    answer = client.post("/v2.1/os-keypairs", json={"keypair": keypair}, headers=headers)
    assert answer.status_code == status, answer.text
    return answer.json()["keypair"]


def _names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [item["keypair"]["name"] for item in answer.json()["keypairs"]]


def test_import_list_show_delete(alice: httpx.Client) -> None:
    created = _create(alice, name="laptop", public_key=ED25519)
    assert created == {
        "name": "laptop",
        "public_key": ED25519,
        "fingerprint": ED25519_MD5,
        "user_id": "alice",
        "type": "ssh",
    }
    listed = alice.get("/v2.1/os-keypairs", headers=LATEST).json()
    assert listed == {
        "keypairs": [
            {
                "keypair": {
                    "name": "laptop",
                    "public_key": ED25519,
                    "fingerprint": ED25519_MD5,
                    "type": "ssh",
                }
            }
        ]
    }
    shown = alice.get("/v2.1/os-keypairs/laptop", headers=LATEST).json()["keypair"]
    assert shown == {
        **created,
        "id": shown["id"],
        "created_at": shown["created_at"],
        "updated_at": None,
        "deleted": False,
        "deleted_at": None,
    }
    assert isinstance(shown["id"], int) and shown["created_at"].endswith("Z")
    assert alice.delete("/v2.1/os-keypairs/laptop", headers=LATEST).status_code == 204
    gone = alice.get("/v2.1/os-keypairs/laptop", headers=LATEST)
    assert gone.status_code == 404
    assert gone.json()["itemNotFound"]["message"] == "Keypair laptop not found for user alice"
    assert alice.delete("/v2.1/os-keypairs/laptop", headers=LATEST).status_code == 404


def test_before_2_2_no_type_and_older_status_codes(alice: httpx.Client) -> None:
    created = _create(alice, version(1), 200, name="laptop", public_key=ED25519)
    assert "type" not in created and created["fingerprint"] == ED25519_MD5
    (item,) = alice.get("/v2.1/os-keypairs", headers=version(1)).json()["keypairs"]
    assert "type" not in item["keypair"]
    assert "type" not in alice.get("/v2.1/os-keypairs/laptop").json()["keypair"]
    refused = alice.post(
        "/v2.1/os-keypairs",
        json={"keypair": {"name": "x", "type": "ssh", "public_key": ED25519}},
        headers=version(1),
    )
    assert refused.status_code == 400 and "type" in refused.json()["badRequest"]["message"]
    assert alice.delete("/v2.1/os-keypairs/laptop", headers=version(1)).status_code == 202


def test_a_generated_key_pair_hands_its_private_key_out_once(alice: httpx.Client) -> None:
    created = _create(alice, name="made")
    private = serialization.load_pem_private_key(created["private_key"].encode(), None)
    public_line = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert created["public_key"].startswith(public_line.decode() + " ")
    assert created["type"] == "ssh" and len(created["fingerprint"].split(":")) == 16
    shown = alice.get("/v2.1/os-keypairs/made", headers=LATEST).json()["keypair"]
    assert "private_key" not in shown
    assert (shown["public_key"], shown["fingerprint"]) == (
        created["public_key"],
        created["fingerprint"],
    )
    (item,) = alice.get("/v2.1/os-keypairs", headers=LATEST).json()["keypairs"]
    assert "private_key" not in item["keypair"]


def test_x509_key_pairs(alice: httpx.Client) -> None:
    made = _create(alice, name="winrm", type="x509")
    certificate = x509.load_pem_x509_certificate(made["public_key"].encode())
    assert certificate.subject.rfc4514_string() == "CN=alice"
    assert "PRIVATE KEY" in made["private_key"]
    assert len(made["fingerprint"].split(":")) == 20  # SHA-1
    again = _create(alice, name="imported", type="x509", public_key=made["public_key"])
    assert again["fingerprint"] == made["fingerprint"] and "private_key" not in again
    listed = alice.get("/v2.1/os-keypairs", headers=LATEST).json()["keypairs"]
    assert [item["keypair"]["type"] for item in listed] == ["x509", "x509"]


@pytest.mark.parametrize(
    ("headers", "keypair", "named"),
    [
        (LATEST, {"public_key": ED25519}, "name"),
        (LATEST, {"name": "", "public_key": ED25519}, "name"),
        (LATEST, {"name": "x" * 256, "public_key": ED25519}, "name"),
        (LATEST, {"name": "a/b", "public_key": ED25519}, "name"),
        # "@" and "." are allowed from 2.92 only.
        (LATEST, {"name": "alice@laptop", "public_key": ED25519}, "name"),
        (LATEST, {"name": 7, "public_key": ED25519}, "name"),
        (LATEST, {"name": "k", "public_key": "ssh-rsa AAAA"}, "public key"),
        (LATEST, {"name": "k", "public_key": "not a key at all"}, "public key"),
        (LATEST, {"name": "k", "public_key": 7}, "public_key"),
        (LATEST, {"name": "k", "type": "x509", "public_key": ED25519}, "certificate"),
        (LATEST, {"name": "k", "type": "rsa"}, "type"),
        (LATEST, {"name": "k", "colour": "red"}, "colour"),
        (LATEST, {"name": "k", "user_id": ""}, "user_id"),
        (version(9), {"name": "k", "user_id": "alice"}, "user_id"),
    ],
)
def test_bad_key_pairs_are_refused(
    alice: httpx.Client, headers: dict[str, str], keypair: dict[str, Any], named: str
) -> None:
    answer = alice.post("/v2.1/os-keypairs", json={"keypair": keypair}, headers=headers)
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["badRequest"]["message"]
    assert _names(alice.get("/v2.1/os-keypairs")) == []


def test_names_may_hold_spaces_dashes_and_underscores(alice: httpx.Client) -> None:
    _create(alice, name="my key_2-b", public_key=ED25519)
    assert alice.get("/v2.1/os-keypairs/my key_2-b").status_code == 200


def test_a_name_is_taken_once_per_user(alice: httpx.Client, carol: httpx.Client) -> None:
    _create(alice, name="laptop", public_key=ED25519)
    again = alice.post(
        "/v2.1/os-keypairs",
        json={"keypair": {"name": "laptop", "public_key": ED25519}},
        headers=LATEST,
    )
    assert again.status_code == 409
    assert again.json()["conflictingRequest"]["message"] == "Key pair 'laptop' already exists."
    # Another user may have a key pair of that name, with the same key.
    assert _create(carol, name="laptop", public_key=ED25519)["user_id"] == "carol"


def test_each_user_sees_only_their_own(alice: httpx.Client, carol: httpx.Client) -> None:
    _create(alice, name="laptop", public_key=ED25519)
    assert _names(carol.get("/v2.1/os-keypairs")) == []
    assert carol.get("/v2.1/os-keypairs/laptop").status_code == 404
    assert carol.delete("/v2.1/os-keypairs/laptop").status_code == 404
    assert _names(alice.get("/v2.1/os-keypairs")) == ["laptop"]


def test_a_member_may_not_name_another_user(alice: httpx.Client, carol: httpx.Client) -> None:
    _create(carol, name="phone", public_key=ED25519)
    theirs = {"user_id": "carol"}
    v210 = version(10)
    for answer in (
        alice.get("/v2.1/os-keypairs", params=theirs, headers=v210),
        alice.get("/v2.1/os-keypairs/phone", params=theirs, headers=v210),
        alice.delete("/v2.1/os-keypairs/phone", params=theirs, headers=v210),
        alice.post(
            "/v2.1/os-keypairs",
            json={"keypair": {"name": "k", "user_id": "carol", "public_key": ED25519}},
            headers=v210,
        ),
    ):
        assert answer.status_code == 403, answer.text
        assert "os_compute_api:os-keypairs:" in answer.json()["forbidden"]["message"]
    # Naming oneself is allowed; before 2.10 the parameter means nothing.
    assert _names(alice.get("/v2.1/os-keypairs", params={"user_id": "alice"}, headers=v210)) == []
    assert _names(alice.get("/v2.1/os-keypairs", params=theirs, headers=version(9))) == []
    assert _names(carol.get("/v2.1/os-keypairs")) == ["phone"]


def test_an_admin_acts_for_another_user_from_2_10(
    compute: httpx.Client, alice: httpx.Client
) -> None:
    v210 = version(10)
    made = _create(compute, v210, name="given", user_id="alice", public_key=ED25519)
    assert made["user_id"] == "alice"
    assert _names(alice.get("/v2.1/os-keypairs")) == ["given"]
    for_alice = {"user_id": "alice"}
    assert _names(compute.get("/v2.1/os-keypairs", params=for_alice, headers=v210)) == ["given"]
    # Without user_id, or before 2.10, an admin sees their own.
    assert _names(compute.get("/v2.1/os-keypairs", headers=v210)) == []
    assert _names(compute.get("/v2.1/os-keypairs", params=for_alice, headers=version(9))) == []
    shown = compute.get("/v2.1/os-keypairs/given", params=for_alice, headers=v210)
    assert shown.status_code == 200 and shown.json()["keypair"]["user_id"] == "alice"
    assert compute.get("/v2.1/os-keypairs/given", headers=v210).status_code == 404
    deleted = compute.delete("/v2.1/os-keypairs/given", params=for_alice, headers=v210)
    assert deleted.status_code == 204
    assert _names(alice.get("/v2.1/os-keypairs")) == []


def test_pages_from_2_35(alice: httpx.Client) -> None:
    for name in ("c", "a", "b"):  # pages follow creation order, not names
        _create(alice, name=name, public_key=ED25519)
    v235 = version(35)
    first = alice.get("/v2.1/os-keypairs", params={"limit": 2}, headers=v235)
    assert _names(first) == ["c", "a"]
    assert first.json()["keypairs_links"] == [
        {"rel": "next", "href": "http://compute/v2.1/os-keypairs?limit=2&marker=a"}
    ]
    last = alice.get("/v2.1/os-keypairs", params={"limit": 2, "marker": "a"}, headers=v235)
    assert _names(last) == ["b"] and "keypairs_links" not in last.json()
    assert _names(alice.get("/v2.1/os-keypairs", headers=v235)) == ["c", "a", "b"]
    unknown = alice.get("/v2.1/os-keypairs", params={"marker": "zzz"}, headers=v235)
    assert unknown.status_code == 400
    assert alice.get("/v2.1/os-keypairs", params={"limit": -1}, headers=v235).status_code == 400
    # Before 2.35 the list is never paged: limit and marker mean nothing.
    older = alice.get(
        "/v2.1/os-keypairs", params={"limit": 1, "marker": "zzz"}, headers=version(34)
    )
    assert _names(older) == ["c", "a", "b"] and "keypairs_links" not in older.json()
