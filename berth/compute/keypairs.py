"""What a key pair may be: the checks on a new one, its fingerprint, and the key pair Berth makes
when the client brings no public key.

A create body (``type`` from 2.2, ``user_id`` from 2.10; ``public_key`` required from 2.92)::

    {"name": "laptop", "type": "ssh", "user_id": "alice", "public_key": "ssh-ed25519 AAAA... me"}

An ``ssh`` key pair is an OpenSSH public key line; its fingerprint is the MD5 of the decoded key
blob, in colon-separated hex (``1e:2c:...``), as upstream shows it. An ``x509`` key pair is a PEM
certificate; its fingerprint is the SHA-1 of the certificate, in the same form.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import string
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from berth.compute import exceptions

SSH: Final = "ssh"
X509: Final = "x509"
TYPES: Final = (SSH, X509)

_NAME_LENGTH: Final = 255
_NAME_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_- ")
# 2.92 also allows "@" and ".", so that names like ssh-keygen's "user@host" comment are allowed.
_NAME_CHARS_2_92: Final = _NAME_CHARS | {"@", "."}
# What the API database's TEXT column holds on MySQL.
_MAX_PUBLIC_KEY: Final = 65535
_RSA_BITS: Final = 2048
_GENERATED_COMMENT: Final = "Generated-by-Berth"
_CERTIFICATE_DAYS: Final = 3650


@dataclass(frozen=True, slots=True)
class NewKeypair:
    name: str
    type: str
    # Another user's (2.10, for an admin); None: the caller's.
    user_id: str | None
    # None: Berth makes the key pair and hands its private key out once.
    public_key: str | None


@dataclass(frozen=True, slots=True)
class KeyMaterial:
    public_key: str
    fingerprint: str
    private_key: str | None = None


def parse_new(
    body: dict[str, Any], *, with_type: bool, with_user_id: bool, import_only: bool
) -> NewKeypair:
    """The key pair a create asks for; BadRequest naming the first thing wrong. ``with_type``
    from 2.2, ``with_user_id`` from 2.10, ``import_only`` from 2.92."""
    allowed = {"name", "public_key"}
    if with_type:
        allowed.add("type")
    if with_user_id:
        allowed.add("user_id")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise exceptions.BadRequest(
            f"Invalid input for keypair: additional properties are not allowed ({unknown})."
        )
    if "name" not in body:
        raise exceptions.BadRequest("Invalid input for keypair: 'name' is a required property.")
    if import_only and "public_key" not in body:
        raise exceptions.BadRequest(
            "Invalid input for keypair: 'public_key' is a required property."
        )
    type_ = body.get("type", SSH)
    if type_ not in TYPES:
        raise exceptions.BadRequest(
            f"Invalid input for keypair: type must be one of {list(TYPES)}, not {type_!r}."
        )
    public_key = body.get("public_key")
    if public_key is not None and not isinstance(public_key, str):
        raise exceptions.BadRequest("Invalid input for keypair: public_key must be a string.")
    user_id = body.get("user_id")
    if user_id is not None and (not isinstance(user_id, str) or not 1 <= len(user_id) <= 255):
        raise exceptions.BadRequest(
            "Invalid input for keypair: user_id must be a string of 1 to 255 characters."
        )
    return NewKeypair(
        name=check_name(body["name"], with_2_92_chars=import_only),
        type=type_,
        user_id=user_id,
        public_key=public_key,
    )


def check_name(name: Any, *, with_2_92_chars: bool) -> str:
    """1 to 255 letters, digits, spaces, ``_`` and ``-`` (and ``@``, ``.`` from 2.92)."""
    allowed = _NAME_CHARS_2_92 if with_2_92_chars else _NAME_CHARS
    if not isinstance(name, str) or not 1 <= len(name) <= _NAME_LENGTH:
        raise exceptions.BadRequest(
            f"Invalid input for keypair: name must be a string of 1 to {_NAME_LENGTH} characters."
        )
    if not set(name) <= allowed:
        shown = "".join(sorted(allowed - set(string.ascii_letters + string.digits)))
        raise exceptions.BadRequest(
            "Invalid input for keypair: name may hold letters, digits and these characters "
            f"only: {shown!r}."
        )
    return name


def imported(type_: str, public_key: str) -> KeyMaterial:
    """A client's public key, checked, with its fingerprint; BadRequest when it is not one."""
    if len(public_key) > _MAX_PUBLIC_KEY:
        raise exceptions.BadRequest(
            f"Keypair data is invalid: the public key is longer than {_MAX_PUBLIC_KEY} characters."
        )
    if type_ == X509:
        return KeyMaterial(public_key, _certificate_fingerprint(public_key))
    return KeyMaterial(public_key, ssh_fingerprint(public_key))


def generated(type_: str, user_id: str) -> KeyMaterial:
    """A new key pair: an RSA key as an OpenSSH public key line (ssh) or in a self-signed
    certificate naming the user (x509); the private key comes back once, in PEM."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=_RSA_BITS)
    if type_ == X509:
        certificate = _self_signed(key, user_id)
        return KeyMaterial(
            public_key=certificate,
            fingerprint=_certificate_fingerprint(certificate),
            private_key=_pem(key, serialization.PrivateFormat.PKCS8),
        )
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    public_key = f"{line.decode()} {_GENERATED_COMMENT}"
    return KeyMaterial(
        public_key=public_key,
        fingerprint=ssh_fingerprint(public_key),
        # The traditional "RSA PRIVATE KEY" form, which every ssh client reads.
        private_key=_pem(key, serialization.PrivateFormat.TraditionalOpenSSL),
    )


def ssh_fingerprint(public_key: str) -> str:
    """The MD5 of the key's blob, ``xx:xx:...``; BadRequest when this is no OpenSSH public key."""
    try:
        key = serialization.load_ssh_public_key(public_key.strip().encode())
    except (ValueError, UnicodeEncodeError, UnsupportedAlgorithm):
        raise exceptions.BadRequest(
            "Keypair data is invalid: the public key is not an OpenSSH public key."
        ) from None
    # Re-encoding gives the blob without the comment, whatever spacing the client used.
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split()[1])
    return _colons(hashlib.md5(blob, usedforsecurity=False).hexdigest())


def _certificate_fingerprint(pem: str) -> str:
    try:
        certificate = x509.load_pem_x509_certificate(pem.strip().encode())
    except (ValueError, UnicodeEncodeError):
        raise exceptions.BadRequest(
            "Keypair data is invalid: the public key is not a PEM X.509 certificate."
        ) from None
    # SHA-1 as upstream shows it: a name for the certificate, not a security check.
    return _colons(certificate.fingerprint(hashes.SHA1()).hex())


def _self_signed(key: rsa.RSAPrivateKey, user_id: str) -> str:
    # A common name holds at most 64 characters; a user id may be longer.
    common_name = (user_id or "berth")[:64]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=_CERTIFICATE_DAYS))
        # A client certificate: what x509 key pairs are for (WinRM logins).
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def _pem(key: rsa.RSAPrivateKey, form: serialization.PrivateFormat) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, form, serialization.NoEncryption()
    ).decode()


def _colons(hexdigest: str) -> str:
    return ":".join(hexdigest[i : i + 2] for i in range(0, len(hexdigest), 2))
