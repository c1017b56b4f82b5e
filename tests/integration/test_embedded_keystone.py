"""The embedded Keystone: its first set-up whatever the generated admin password looks like, and
identity writes from several clients at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from berth.allinone.identity import EmbeddedIdentity, IdentityFailed
from berth.allinone.stack import placement_caller
from berth.common.inprocess import InProcessTransport
from berth.config import KeystoneAuthtokenSettings
from berth.identity import embedded
from berth.identity.accounts import ensure_accounts

# token_urlsafe draws from an alphabet with "-": one new data directory in 64 got such a
# password, which keystone-manage took for an option, and berth up failed to start.
DASH_PASSWORD = "-starts-with-a-dash"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> embedded.KeystoneHome:
    return embedded.KeystoneHome(tmp_path_factory.mktemp("identity") / "identity")


# One Keystone app per process: Keystone's configuration is process-wide.
@pytest.fixture(scope="module")
def keystone(home: embedded.KeystoneHome) -> Iterator[httpx.Client]:
    home.root.mkdir()
    home.passwords_file.write_text(json.dumps({embedded.ADMIN: DASH_PASSWORD}))
    passwords = embedded.prepare(home, "http://identity.local/identity")
    assert passwords[embedded.ADMIN] == DASH_PASSWORD
    app = embedded.wsgi_app(home, lambda: None)
    transport = httpx.WSGITransport(app=app, script_name="/identity")
    with httpx.Client(transport=transport, base_url="http://identity.local") as client:
        yield client


def _login(
    client: httpx.Client, user: str, password: str, project: str | None = None
) -> httpx.Response:
    identity = {
        "methods": ["password"],
        "password": {"user": {"name": user, "password": password, "domain": {"id": "default"}}},
    }
    auth: dict[str, object] = {"identity": identity}
    if project:
        auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return client.post("/v3/auth/tokens", json={"auth": auth})


def test_an_admin_password_beginning_with_a_dash_still_bootstraps(keystone: httpx.Client) -> None:
    assert _login(keystone, embedded.ADMIN, DASH_PASSWORD).status_code == 201


def test_projects_and_users_made_and_deleted_from_several_clients_at_once(
    keystone: httpx.Client,
) -> None:
    # As tempest's workers do: each makes a project and a user, logs in, deletes both. On
    # SQLite two such writes at once failed with "database is locked" (500) until Keystone's
    # writing requests were made to run one at a time.
    token = _login(keystone, embedded.ADMIN, DASH_PASSWORD, embedded.ADMIN).headers[
        "X-Subject-Token"
    ]
    admin = {"X-Auth-Token": token}

    def churn(worker: int) -> list[int]:
        statuses = []
        for round_ in range(3):
            name = f"w{worker}-r{round_}"
            project = keystone.post("/v3/projects", json={"project": {"name": name}}, headers=admin)
            user = keystone.post(
                "/v3/users", json={"user": {"name": name, "password": "pw"}}, headers=admin
            )
            statuses += [project.status_code, user.status_code]
            if user.status_code == 201:
                statuses.append(_login(keystone, name, "pw").status_code)
                statuses.append(
                    keystone.delete(
                        f"/v3/users/{user.json()['user']['id']}", headers=admin
                    ).status_code
                )
            if project.status_code == 201:
                project_id = project.json()["project"]["id"]
                statuses.append(
                    keystone.delete(f"/v3/projects/{project_id}", headers=admin).status_code
                )
        return statuses

    with ThreadPoolExecutor(4) as pool:
        statuses = [status for worker in pool.map(churn, range(4)) for status in worker]
    assert all(status in (201, 204) for status in statuses), sorted(set(statuses))


def test_a_set_up_step_that_fails_stops_berth_up_with_keystones_error(tmp_path: Path) -> None:
    home = embedded.KeystoneHome(tmp_path / "identity")
    home.write_config()
    # The key repository's parent is a file: fernet_setup cannot make it.
    (tmp_path / "identity" / "fernet-keys").write_text("not a directory")
    with pytest.raises(RuntimeError, match="keystone-manage failed") as failed:
        embedded.prepare(home, "http://identity.local/identity")
    assert "fernet" in str(failed.value).lower()
    assert not home.setup_stamp.exists()


def test_berth_ups_identity_answers_503_until_it_is_set_up(tmp_path: Path) -> None:
    identity = EmbeddedIdentity(tmp_path / "identity", "http://identity.local/identity", {}, "INFO")
    transport = InProcessTransport(identity)
    with httpx.Client(transport=transport, base_url="http://identity.local") as client:
        starting = client.get("/v3")
    assert starting.status_code == 503
    assert starting.headers["retry-after"] == "1"


def test_the_in_process_caller_has_the_roles_of_the_service_users_token(
    keystone: httpx.Client, home: embedded.KeystoneHome
) -> None:
    passwords = home.passwords()
    catalog = {"identity": "http://identity.local/identity"}
    ensure_accounts(keystone, passwords, catalog, home.accounts_stamp)
    login = _login(
        keystone, embedded.SERVICE_USER, passwords[embedded.SERVICE_USER], embedded.SERVICE_PROJECT
    )
    assert login.status_code == 201, login.text
    token = login.json()["token"]
    settings = KeystoneAuthtokenSettings(
        username=embedded.SERVICE_USER, project_name=embedded.SERVICE_PROJECT
    )
    caller = placement_caller("keystone", "unused", settings)
    assert caller is not None
    assert set(caller.roles) == {role["name"] for role in token["roles"]}
    assert set(caller.roles) == {"admin", "manager", "member", "reader", "service"}
    assert (caller.user_id, caller.project_id) == (token["user"]["name"], token["project"]["name"])
    stranger = KeystoneAuthtokenSettings(username="someone", project_name=embedded.SERVICE_PROJECT)
    assert placement_caller("keystone", "unused", stranger) is None


def test_a_failed_set_up_of_berth_ups_identity_is_raised_to_whoever_waits_for_it(
    tmp_path: Path,
) -> None:
    identity = EmbeddedIdentity(tmp_path / "identity", "http://identity.local/identity", {}, "INFO")
    (tmp_path / "identity" / "fernet-keys").write_text("not a directory")
    with pytest.raises(RuntimeError, match="keystone-manage failed"):
        identity.set_up()
    with pytest.raises(IdentityFailed) as failed:
        identity.wait()
    assert "keystone-manage failed" in str(failed.value.__cause__)
