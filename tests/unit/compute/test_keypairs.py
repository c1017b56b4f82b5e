"""Key pairs' rules: the checks on a create per microversion (2.92's among them, which the API
does not serve yet), fingerprints as upstream computes them, generated key pairs, and the
policy defaults (admin or the key pair's user)."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from berth.common.context import RequestContext
from berth.compute import keypairs
from berth.compute.exceptions import BadRequest
from berth.compute.policy import ComputePolicyEnforcer
from berth.config import ComputeSettings

# ssh-keygen -t ed25519 -C alice@laptop; ssh-keygen -l -E md5 says 56:45:cd:9c:...
ED25519 = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMf62eVG9mAKYT+r+Y2M30TMDehI671ZWnnbRjDBZPtv alice@laptop"
)
ED25519_MD5 = "56:45:cd:9c:cb:97:2a:93:c3:36:4e:62:d6:b0:d6:42"
LATEST = {"with_type": True, "with_user_id": True, "import_only": False}
V2_92 = {**LATEST, "import_only": True}


def test_a_create_is_parsed_with_its_defaults() -> None:
    parsed = keypairs.parse_new({"name": "laptop"}, **LATEST)
    assert parsed == keypairs.NewKeypair("laptop", "ssh", None, None)
    full = {"name": "k", "type": "x509", "user_id": "bob", "public_key": "PEM"}
    assert keypairs.parse_new(full, **LATEST) == keypairs.NewKeypair("k", "x509", "bob", "PEM")


@pytest.mark.parametrize(
    ("body", "flags", "named"),
    [
        ({"name": "k"}, V2_92, "public_key"),
        ({"name": "k", "type": "ssh"}, {**LATEST, "with_type": False}, "type"),
        ({"name": "k", "user_id": "bob"}, {**LATEST, "with_user_id": False}, "user_id"),
        ({"name": "k", "user_id": 7}, LATEST, "user_id"),
        ({"name": "k@host"}, LATEST, "name"),
        ({"name": "k.pub"}, LATEST, "name"),
        ({"name": "k!", "public_key": ED25519}, V2_92, "name"),
        ({"name": " " * 256}, LATEST, "name"),
    ],
)
def test_what_a_create_refuses(body: dict[str, Any], flags: dict[str, bool], named: str) -> None:
    with pytest.raises(BadRequest, match=named):
        keypairs.parse_new(body, **flags)  # type: ignore[arg-type]


def test_2_92_allows_at_and_dot_in_names() -> None:
    parsed = keypairs.parse_new({"name": "alice@laptop.lan", "public_key": ED25519}, **V2_92)
    assert parsed.name == "alice@laptop.lan"


def test_an_ssh_fingerprint_is_the_md5_of_the_key_blob() -> None:
    assert keypairs.ssh_fingerprint(ED25519) == ED25519_MD5
    # The comment and surrounding whitespace change nothing.
    assert keypairs.ssh_fingerprint(ED25519.rsplit(" ", 1)[0] + "\n") == ED25519_MD5
    assert keypairs.imported("ssh", ED25519) == keypairs.KeyMaterial(ED25519, ED25519_MD5)


@pytest.mark.parametrize("public_key", ["", "ssh-rsa", "ssh-ed25519 AAAA", "é", "x" * 70000])
def test_what_is_not_a_public_key(public_key: str) -> None:
    with pytest.raises(BadRequest, match="Keypair data is invalid"):
        keypairs.imported("ssh", public_key)


def test_any_openssh_key_type_imports() -> None:
    line = (
        ed25519.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    assert len(keypairs.imported("ssh", line).fingerprint) == 47


def test_a_generated_ssh_key_pair_is_rsa_in_pem_and_openssh() -> None:
    made = keypairs.generated("ssh", "alice")
    assert made.private_key is not None
    assert made.private_key.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert made.public_key.startswith("ssh-rsa ") and made.public_key.endswith(
        " Generated-by-Berth"
    )
    assert made.fingerprint == keypairs.ssh_fingerprint(made.public_key)


ADMIN = RequestContext(user_id="admin", project_id="admin", roles=("admin",))
ALICE = RequestContext(user_id="alice", project_id="p1", roles=("member", "reader"))
# Another user of alice's project: a key pair is a user's, so a project rule would let her in.
CAROL = RequestContext(user_id="carol", project_id="p1", roles=("member", "reader"))


@pytest.mark.parametrize("new_defaults", [False, True])
@pytest.mark.parametrize("action", ["index", "create", "show", "delete"])
def test_keypair_rules_let_the_keys_user_and_admins(action: str, new_defaults: bool) -> None:
    enforcer = ComputePolicyEnforcer(ComputeSettings(enforce_new_defaults=new_defaults))
    rule = f"os_compute_api:os-keypairs:{action}"
    alices = {"user_id": "alice"}
    assert enforcer.check(ALICE, rule, alices)
    assert enforcer.check(ADMIN, rule, alices)
    assert not enforcer.check(CAROL, rule, alices)


def test_a_generated_certificate_names_even_a_long_user() -> None:
    made = keypairs.generated("x509", "u" * 100)
    certificate = x509.load_pem_x509_certificate(made.public_key.encode())
    assert certificate.subject.rfc4514_string() == "CN=" + "u" * 64
    assert made.fingerprint == keypairs.imported("x509", made.public_key).fingerprint
