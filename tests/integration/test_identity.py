"""``berth up`` with its Keystone, driven by the real openstack CLI through the clouds.yaml it
writes: password logins, every service found in the catalog, tokens validated by each API, and
one project's users kept out of another's resources.

One cloud serves the whole module (its Keystone takes a while to set up; scripts/test runs a
module's tests on one worker); the tests share it and so each works with names of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.server import TWO_OVS_HOSTS, running_berth_up, running_placement

OPENSTACK = Path(sys.executable).parent / "openstack"


@dataclass
class Cloud:
    url: str
    clouds: Path

    def run(self, *args: str, cloud: str = "berth") -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update({"OS_CLIENT_CONFIG_FILE": str(self.clouds), "OS_CLOUD": cloud})
        return subprocess.run(
            [str(OPENSTACK), *args], env=env, capture_output=True, text=True, timeout=180
        )

    def cli(self, *args: str, cloud: str = "berth") -> Any:
        done = self.run(*args, cloud=cloud)
        assert done.returncode == 0, f"{cloud}: {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return json.loads(done.stdout) if "json" in args else done.stdout

    def refused(self, *args: str, cloud: str) -> str:
        """What the CLI printed when the cloud refused ``args``."""
        done = self.run(*args, cloud=cloud)
        assert done.returncode != 0, f"{cloud}: {' '.join(args)} was allowed:\n{done.stdout}"
        return done.stderr

    def password_cloud(self, name: str, user: str, password: str, project: str) -> None:
        """Add a cloud ``name`` to clouds.yaml that logs in as ``user`` of ``project``."""
        document = yaml.safe_load(self.clouds.read_text())
        auth = {**document["clouds"]["berth"]["auth"]}
        auth.update({"username": user, "password": password, "project_name": project})
        document["clouds"][name] = {**document["clouds"]["berth"], "auth": auth}
        self.clouds.write_text(yaml.safe_dump(document))


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    root = tmp_path_factory.mktemp("keystone-cloud")
    fleet = root / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(TWO_OVS_HOSTS))
    with running_berth_up(str(root / "data"), str(fleet), auth="keystone") as url:
        cloud = Cloud(url, root / "data" / "clouds.yaml")
        cloud.cli("network", "create", "--share", "--provider-network-type", "flat",
                  "--provider-physical-network", "public", "public")  # fmt: skip
        cloud.cli("subnet", "create", "--network", "public", "--subnet-range", "192.0.2.0/24",
                  "public-v4")  # fmt: skip
        yield cloud


def test_every_api_refuses_a_missing_or_forged_token_and_says_where_to_log_in(
    cloud: Cloud,
) -> None:
    for path in ("/compute/v2.1/servers", "/networking/v2.0/ports", "/placement/usages",
                 "/image/v2/images"):  # fmt: skip
        for headers in ({}, {"x-auth-token": "admin"}):
            answer = httpx.get(cloud.url + path, headers=headers)
            assert answer.status_code == 401, (path, headers, answer.text)
            assert f'uri="{cloud.url}/identity"' in answer.headers["www-authenticate"]
    # The version documents stay open, as upstream's do.
    assert httpx.get(cloud.url + "/compute/").status_code == 200
    assert httpx.get(cloud.url + "/placement/").status_code == 200


def test_the_catalog_lists_every_service_at_its_endpoint(cloud: Cloud) -> None:
    catalog = {entry["Type"]: entry for entry in cloud.cli("catalog", "list", "-f", "json")}
    assert set(catalog) == {"identity", "compute", "network", "placement", "image"}
    (public,) = [e for e in catalog["compute"]["Endpoints"] if e["interface"] == "public"]
    assert public["url"] == f"{cloud.url}/compute/v2.1"


def test_flavors_are_made_by_the_admin_and_seen_by_members(cloud: Cloud) -> None:
    created = cloud.cli("flavor", "create", "--vcpus", "2", "--ram", "1024", "--disk", "5",
                        "c2", "-f", "json")  # fmt: skip
    cloud.cli("flavor", "set", "--property", "hw:cpu_policy=dedicated", "c2")
    shown = cloud.cli("flavor", "show", "c2", "-f", "json")
    assert shown["properties"] == {"hw:cpu_policy": "dedicated"}
    names = [f["Name"] for f in cloud.cli("flavor", "list", "-f", "json", cloud="berth-demo")]
    assert "c2" in names and "m1.tiny" in names
    assert "403" in cloud.refused("flavor", "create", "--ram", "1", "x", cloud="berth-demo")
    cloud.cli("flavor", "delete", created["id"])


def test_keypairs_belong_to_their_user_and_a_server_boots_with_one(
    cloud: Cloud, tmp_path: Path
) -> None:
    private_key = tmp_path / "demo-key.pem"
    made = cloud.cli("keypair", "create", "--private-key", str(private_key), "demo-key",
                     "-f", "json", cloud="berth-demo")  # fmt: skip
    assert private_key.read_text().startswith("-----BEGIN")
    assert made["name"] == "demo-key"
    listed = cloud.cli("keypair", "list", "-f", "json", cloud="berth-demo")
    assert [k["Name"] for k in listed] == ["demo-key"]
    assert cloud.cli("keypair", "show", "demo-key", "-f", "json", cloud="berth-demo")["user_id"]
    # Another user (the admin, too) has key pairs of their own.
    assert "demo-key" not in str(cloud.cli("keypair", "list", "-f", "json"))
    server = cloud.cli("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                       "--network", "public", "--key-name", "demo-key", "--wait", "keyed",
                       "-f", "json", cloud="berth-demo")  # fmt: skip
    assert (server["status"], server["key_name"]) == ("ACTIVE", "demo-key")
    cloud.cli("server", "delete", "--wait", server["id"], cloud="berth-demo")
    cloud.cli("keypair", "delete", "demo-key", cloud="berth-demo")
    assert cloud.cli("keypair", "list", "-f", "json", cloud="berth-demo") == []


def test_zones_hypervisors_and_services_for_the_admin(cloud: Cloud) -> None:
    zones = cloud.cli("availability", "zone", "list", "--compute", "-f", "json")
    assert {z["Zone Name"] for z in zones} == {"nova"}
    hypervisors = cloud.cli("hypervisor", "list", "-f", "json")
    assert sorted(h["Hypervisor Hostname"] for h in hypervisors) == ["cn1", "cn2"]
    services = cloud.cli("compute", "service", "list", "--service", "nova-compute", "-f", "json")
    assert {s["Host"] for s in services} == {"cn1", "cn2"}
    cloud.cli("compute", "service", "set", "--disable", "--disable-reason", "maintenance",
              "cn2", "nova-compute")  # fmt: skip
    disabled = cloud.cli("compute", "service", "list", "--host", "cn2", "-f", "json")
    assert [s["Status"] for s in disabled if s["Binary"] == "nova-compute"] == ["disabled"]
    cloud.cli("compute", "service", "set", "--enable", "cn2", "nova-compute")
    assert "403" in cloud.refused("hypervisor", "list", cloud="berth-demo")


def test_aggregates_and_server_groups(cloud: Cloud) -> None:
    cloud.cli("aggregate", "create", "--zone", "nova", "fast")
    cloud.cli("aggregate", "add", "host", "fast", "cn1")
    cloud.cli("aggregate", "set", "--property", "ssd=true", "fast")
    aggregate = cloud.cli("aggregate", "show", "fast", "-f", "json")
    assert aggregate["hosts"] == ["cn1"] and aggregate["properties"] == {"ssd": "true"}
    cloud.cli("aggregate", "remove", "host", "fast", "cn1")
    cloud.cli("aggregate", "delete", "fast")
    group = cloud.cli("server", "group", "create", "--policy", "anti-affinity", "apart",
                      "-f", "json", cloud="berth-demo")  # fmt: skip
    listed = cloud.cli("server", "group", "list", "-f", "json", cloud="berth-demo")
    assert [(g["ID"], g["Name"]) for g in listed] == [(group["id"], "apart")]
    cloud.cli("server", "group", "delete", "apart", cloud="berth-demo")


def test_osc_placement_finds_placement_in_the_catalog(cloud: Cloud) -> None:
    providers = cloud.cli("resource", "provider", "list", "-f", "json")
    nodes = {p["name"]: p["uuid"] for p in providers}
    assert {"cn1", "cn2"} <= set(nodes)
    inventory = cloud.cli("resource", "provider", "inventory", "list", nodes["cn1"],
                          "-f", "json")  # fmt: skip
    assert {i["resource_class"] for i in inventory} >= {"VCPU", "MEMORY_MB", "DISK_GB"}
    classes = cloud.cli("resource", "class", "list", "-f", "json")
    assert "NET_BW_EGR_KILOBIT_PER_SEC" in {c["name"] for c in classes}
    candidates = cloud.cli("--os-placement-api-version", "1.39", "allocation", "candidate",
                           "list", "--resource", "VCPU=1", "-f", "json")  # fmt: skip
    assert len({c["#"] for c in candidates}) == 2
    traits = cloud.cli("trait", "list", "-f", "json")
    assert "COMPUTE_STATUS_DISABLED" in {t["name"] for t in traits}
    assert "403" in cloud.refused("resource", "provider", "list", cloud="berth-demo")


def test_qos_ports_and_a_member_boot(cloud: Cloud) -> None:
    cloud.cli("network", "qos", "policy", "create", "--share", "min-bw")
    cloud.cli("network", "qos", "rule", "create", "--type", "minimum-bandwidth",
              "--min-kbps", "1000", "--egress", "min-bw")  # fmt: skip
    rules = cloud.cli("network", "qos", "rule", "list", "min-bw", "-f", "json", cloud="berth-demo")
    assert [r["Min Kbps"] for r in rules] == [1000]
    port = cloud.cli("port", "create", "--network", "public", "--qos-policy", "min-bw",
                     "qos-port", "-f", "json", cloud="berth-demo")  # fmt: skip
    # The port's resource request is the admin's to read.
    assert port.get("resource_request") is None
    request = cloud.cli("port", "show", port["id"], "-f", "json")["resource_request"]
    server = cloud.cli("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                       "--port", "qos-port", "--wait", "qos-vm", "-f", "json",
                       cloud="berth-demo")  # fmt: skip
    assert server["status"] == "ACTIVE"
    bound = cloud.cli("port", "show", port["id"], "-f", "json", cloud="berth-demo")
    assert not bound["binding_host_id"] and not bound["binding_profile"]
    admin_view = cloud.cli("port", "show", port["id"], "-f", "json")
    assert admin_view["binding_host_id"] in ("cn1", "cn2")
    groups = {group["id"] for group in request["request_groups"]}
    assert set(admin_view["binding_profile"]["allocation"]) == groups
    cloud.cli("server", "delete", "--wait", server["id"], cloud="berth-demo")
    cloud.cli("port", "delete", port["id"], cloud="berth-demo")


def test_one_project_sees_and_changes_nothing_of_another(cloud: Cloud) -> None:
    cloud.cli("project", "create", "--domain", "default", "other")
    cloud.cli("user", "create", "--domain", "default", "--password", "other-secret",
              "--project", "other", "stranger")  # fmt: skip
    cloud.cli("role", "add", "--user", "stranger", "--project", "other", "member")
    cloud.password_cloud("other", "stranger", "other-secret", "other")
    demo = {"cloud": "berth-demo"}
    server = cloud.cli("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                       "--network", "public", "--wait", "private-vm", "-f", "json",
                       **demo)  # fmt: skip
    network = cloud.cli("network", "create", "demo-net", "-f", "json", **demo)
    group = cloud.cli("server", "group", "create", "--policy", "affinity", "demo-group",
                      "-f", "json", **demo)  # fmt: skip
    cloud.cli("keypair", "create", "demo-only", **demo)
    ports = cloud.cli("port", "list", "--server", server["id"], "-f", "json", **demo)
    other = {"cloud": "other"}
    assert cloud.cli("server", "list", "-f", "json", **other) == []
    assert "No Server found" in cloud.refused("server", "show", server["id"], **other)
    assert cloud.refused("server", "delete", server["id"], **other)
    assert "demo-net" not in str(cloud.cli("network", "list", "-f", "json", **other))
    assert cloud.refused("network", "delete", network["id"], **other)
    assert ports and cloud.refused("port", "delete", ports[0]["ID"], **other)
    assert cloud.cli("server", "group", "list", "-f", "json", **other) == []
    assert cloud.refused("server", "group", "delete", group["id"], **other)
    assert cloud.cli("keypair", "list", "-f", "json", **other) == []
    policy = cloud.cli("network", "qos", "policy", "create", "admins-only", "-f", "json")
    assert "admins-only" not in str(cloud.cli("network", "qos", "policy", "list", "-f", "json",
                                              **other))  # fmt: skip
    assert cloud.refused("network", "qos", "policy", "delete", policy["id"], **other)
    demo_project = cloud.cli("project", "show", "demo", "-f", "json")["id"]
    assert "403" in cloud.refused("usage", "show", "--project", demo_project, **other)
    assert "403" in cloud.refused("resource", "usage", "show", demo_project, **other)
    # demo's servers are still there, untouched.
    listed = cloud.cli("server", "list", "-f", "json", **demo)
    assert [(s["ID"], s["Status"]) for s in listed] == [(server["id"], "ACTIVE")]
    cloud.cli("server", "delete", "--wait", server["id"], **demo)
    cloud.cli("network", "delete", network["id"], **demo)
    cloud.cli("server", "group", "delete", group["id"], **demo)
    cloud.cli("keypair", "delete", "demo-only", **demo)
    cloud.cli("network", "qos", "policy", "delete", policy["id"])


def test_a_reader_reads_its_project_but_writes_nothing(cloud: Cloud) -> None:
    server = cloud.cli("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                       "--network", "public", "--wait", "read-me", "-f", "json",
                       cloud="berth-demo")  # fmt: skip
    reader = {"cloud": "berth-reader"}
    listed = cloud.cli("server", "list", "-f", "json", **reader)
    assert server["id"] in {s["ID"] for s in listed}
    assert "403" in cloud.refused("server", "delete", server["id"], **reader)
    assert "403" in cloud.refused("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                                  "--network", "public", "nope", **reader)  # fmt: skip
    assert cloud.refused("network", "create", "nope", **reader)
    assert cloud.refused("server", "group", "create", "--policy", "affinity", "nope", **reader)
    cloud.cli("server", "delete", "--wait", server["id"], cloud="berth-demo")


def _token(cloud: Cloud, user: str, password: str, project: str) -> str:
    scope = {"project": {"name": project, "domain": {"id": "default"}}}
    user_ = {"name": user, "domain": {"id": "default"}, "password": password}
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": user_}},
                     "scope": scope}}  # fmt: skip
    answer = httpx.post(f"{cloud.url}/identity/v3/auth/tokens", json=body)
    assert answer.status_code == 201, answer.text
    return answer.headers["x-subject-token"]


def _passwords(cloud: Cloud) -> dict[str, str]:
    return dict(json.loads((cloud.clouds.parent / "identity" / "passwords.json").read_text()))


def test_a_service_token_counts_only_with_the_service_role(cloud: Cloud) -> None:
    passwords = _passwords(cloud)
    member = _token(cloud, "demo", passwords["demo"], "demo")
    service = _token(cloud, "berth", passwords["berth"], "service")
    servers = f"{cloud.url}/compute/v2.1/servers"
    assert httpx.get(servers, headers={"x-auth-token": member}).status_code == 200
    both = {"x-auth-token": member, "x-service-token": service}
    assert httpx.get(servers, headers=both).status_code == 200
    # A member's token is no service token: the request is refused as a whole.
    forged = {"x-auth-token": member, "x-service-token": member}
    assert httpx.get(servers, headers=forged).status_code == 401


def test_a_separate_placement_process_validates_tokens_with_this_keystone(
    cloud: Cloud, tmp_path: Path
) -> None:
    """The distributed shape: ``berth serve placement --auth keystone`` pointed, through
    [keystone_authtoken], at a Keystone it does not run."""
    passwords = _passwords(cloud)
    identity = f"{cloud.url}/identity"
    settings = {
        "BERTH_KEYSTONE_AUTHTOKEN__AUTH_URL": identity,
        "BERTH_KEYSTONE_AUTHTOKEN__WWW_AUTHENTICATE_URI": identity,
        "BERTH_KEYSTONE_AUTHTOKEN__USERNAME": "berth",
        "BERTH_KEYSTONE_AUTHTOKEN__PASSWORD": passwords["berth"],
    }
    database = f"sqlite:///{tmp_path / 'placement.db'}"
    with running_placement(database, "--auth", "keystone", env=settings) as url:
        assert httpx.get(url + "/").status_code == 200
        refused = httpx.get(url + "/resource_providers", headers={"x-auth-token": "admin"})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == f'Keystone uri="{identity}"'
        admin = _token(cloud, "admin", passwords["admin"], "admin")
        member = _token(cloud, "demo", passwords["demo"], "demo")
        assert httpx.get(url + "/resource_providers", headers={"x-auth-token": admin}).json() == {
            "resource_providers": []
        }
        as_member = httpx.get(url + "/resource_providers", headers={"x-auth-token": member})
        assert as_member.status_code == 403


def test_quotas_hold_a_project_to_its_limits_and_usage_is_shown(cloud: Cloud) -> None:
    def limits(*args: str, cloud_name: str = "berth") -> dict[str, Any]:
        shown = cloud.cli("quota", "show", *args, "-f", "json", cloud=cloud_name)
        return {row["Resource"]: row["Limit"] for row in shown}

    quotas = limits("demo")
    # Nova's and Neutron's defaults, as `openstack quota show` prints them.
    assert (quotas["instances"], quotas["cores"], quotas["ram"]) == (10, 20, 51200)
    assert (quotas["networks"], quotas["subnets"], quotas["ports"]) == (100, 100, 500)
    assert limits(cloud_name="berth-demo")["instances"] == 10
    cloud.cli("quota", "set", "--instances", "1", "--networks", "1", "demo")
    demo = {"cloud": "berth-demo"}
    first = cloud.cli("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                      "--network", "public", "--wait", "within", "-f", "json", **demo)  # fmt: skip
    refused = cloud.refused("server", "create", "--flavor", "m1.tiny", "--image", "cirros",
                            "--network", "public", "beyond", **demo)  # fmt: skip
    assert "403" in refused and "instances" in refused
    network = cloud.cli("network", "create", "one-net", "-f", "json", **demo)
    refused = cloud.refused("network", "create", "two-net", **demo)
    assert "409" in refused and "network" in refused
    assert "403" in cloud.refused("quota", "set", "--instances", "50", "demo", **demo)
    usage = cloud.cli("usage", "show", "--project", "demo", "-f", "json")
    assert len(usage["Servers"]) >= 1
    cloud.cli("server", "delete", "--wait", first["id"], **demo)
    cloud.cli("network", "delete", network["id"], **demo)
    cloud.cli("quota", "set", "--instances", "10", "--networks", "100", "demo")
