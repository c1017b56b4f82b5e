"""Users' key pairs in the API database: one name per user, each user's own list."""

from __future__ import annotations

import pytest

from berth.common.db import Database
from berth.compute.db import keypairs
from berth.compute.db.errors import Duplicate


def test_a_key_pair_is_created_read_listed_and_deleted(api_db: Database) -> None:
    with api_db.write() as conn:
        made = keypairs.create(conn, "alice", "laptop", "ssh", "aa:bb", "ssh-ed25519 AAAA")
        keypairs.create(conn, "alice", "phone", "ssh", "cc:dd", "ssh-ed25519 BBBB")
        # The same name is another user's to take.
        keypairs.create(conn, "bob", "laptop", "x509", "ee:ff", "PEM")
        with pytest.raises(Duplicate):
            keypairs.create(conn, "alice", "laptop", "ssh", "aa:bb", "ssh-ed25519 AAAA")
    assert (made["user_id"], made["name"], made["type"]) == ("alice", "laptop", "ssh")
    assert made["created_at"] is not None
    with api_db.write() as conn:
        assert [row["name"] for row in keypairs.list_keypairs(conn, "alice")] == [
            "laptop",
            "phone",
        ]
        assert keypairs.get(conn, "bob", "laptop")["type"] == "x509"  # type: ignore[index]
        assert keypairs.get(conn, "carol", "laptop") is None
        assert keypairs.delete(conn, "alice", "laptop") is True
        assert keypairs.delete(conn, "alice", "laptop") is False
        assert keypairs.get(conn, "bob", "laptop") is not None
