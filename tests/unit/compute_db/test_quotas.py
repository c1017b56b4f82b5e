"""The limits a create decides with, read in one statement under the project's lock."""

from __future__ import annotations

from berth.common.db import Database
from berth.compute import quotas
from berth.compute.db import quotas as store


def test_a_projects_and_users_limits_are_read_in_one_go(api_db: Database) -> None:
    """What ``hold_limits`` reads is what the three separate reads give: the default class's
    limits under the project's own, and the user's own, none of another project or user."""
    with api_db.write() as conn:
        store.set_class_limits(conn, "default", {"cores": 40, "instances": 20})
        store.set_class_limits(conn, "gold", {"cores": 400})
        store.set_project_limits(conn, "p1", {"instances": 5, "ram": -1})
        store.set_project_limits(conn, "p2", {"instances": 7})
        store.set_user_limits(conn, "p1", "u1", {"cores": 4})
        store.set_user_limits(conn, "p1", "u2", {"cores": 8})
        store.set_user_limits(conn, "p2", "u1", {"cores": 16})
    quotas.prepare_project(api_db, "p1")
    with api_db.write() as conn:
        held = quotas.hold_limits(conn, ("p1", "u1"))
        assert held.project == quotas.project_limits(conn, "p1")
        assert held.user == store.user_limits(conn, "p1", "u1") == {"cores": 4}
        assert (held.project["instances"], held.project["cores"], held.project["ram"]) == (
            5,
            40,
            -1,
        )
        assert held.project["key_pairs"] == quotas.DEFAULTS["key_pairs"]
        nobody = quotas.hold_limits(conn, ("p3", "u9"))
        assert nobody.project == quotas.default_limits(conn) and nobody.user == {}
