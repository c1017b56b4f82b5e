"""The real client: the `openstack` CLI (python-openstackclient on openstacksdk) against a running
``berth serve network``.

With ``--os-auth-type admin_token`` the SDK takes ``--os-endpoint`` as the network endpoint and
appends ``v2.0`` itself (it skips version discovery for the network service), so the same options
as for Placement work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from berth.network.resource_request import BANDWIDTH, group_id
from tests.integration.server import running_network

# python-openstackclient is a test dependency, installed next to this Python.
OPENSTACK = Path(sys.executable).parent / "openstack"

# An Open vSwitch agent on compute1 reaching both physical networks, with guaranteed bandwidth.
AGENT = {
    "agent_type": "Open vSwitch agent",
    "host": "compute1",
    "binary": "neutron-openvswitch-agent",
    "topic": "N/A",
    "availability_zone": "nova",
    "configurations": {
        "bridge_mappings": {"physnet1": "br-ex", "physnet2": "br-data"},
        "resource_provider_bandwidths": {
            "br-ex": {"egress": 10_000_000, "ingress": 10_000_000},
            "br-data": {"egress": 25_000_000, "ingress": 25_000_000},
        },
        "tunnel_types": ["vxlan"],
    },
}


def _run(endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    cmd = [
        str(OPENSTACK), "--os-auth-type", "admin_token", "--os-token", "admin",
        "--os-endpoint", endpoint, *args,
    ]  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def _cli(endpoint: str, *args: str) -> Any:
    done = _run(endpoint, *args)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout) if "-f" in args else done.stdout


def _cli_refused(endpoint: str, *args: str) -> str:
    """What the CLI says when the service refuses the command."""
    done = _run(endpoint, *args)
    assert done.returncode != 0, f"{' '.join(args)} succeeded:\n{done.stdout}"
    return done.stderr


def test_routed_network_qos_port_resource_request_agents_and_binding(tmp_path: Path) -> None:
    with running_network(f"sqlite:///{tmp_path / 'network.db'}") as url:
        # The version document, which keystoneauth's discovery reads (no token needed), and the
        # resources of v2.0.
        assert httpx.get(f"{url}/").json() == {
            "versions": [
                {
                    "id": "v2.0",
                    "status": "CURRENT",
                    "links": [{"href": f"{url}/v2.0/", "rel": "self"}],
                }
            ]
        }
        resources = httpx.get(f"{url}/v2.0/", headers={"x-auth-token": "admin"}).json()
        assert {r["collection"]: r["name"] for r in resources["resources"]}[
            "qos/policies"
        ] == "policy"

        net = _cli(
            url, "network", "create", "--provider-network-type", "vlan",
            "--provider-physical-network", "physnet1", "--provider-segment", "100",
            "net1", "-f", "json",
        )  # fmt: skip
        assert (net["provider:network_type"], net["provider:physical_network"]) == (
            "vlan",
            "physnet1",
        )
        assert (net["provider:segmentation_id"], net["mtu"], net["status"]) == (100, 1500, "ACTIVE")
        seg2 = _cli(
            url, "network", "segment", "create", "--network", "net1", "--network-type", "vlan",
            "--physical-network", "physnet2", "--segment", "200", "seg2", "-f", "json",
        )  # fmt: skip
        assert seg2["network_id"] == net["id"]
        assert (seg2["name"], seg2["physical_network"], seg2["segmentation_id"]) == (
            "seg2",
            "physnet2",
            200,
        )
        # Two segments: the network shows them as a list, and no single provider:* any more.
        shown = _cli(url, "network", "show", "net1", "-f", "json")
        assert shown["segments"] == [
            {
                "provider:network_type": "vlan",
                "provider:physical_network": "physnet1",
                "provider:segmentation_id": 100,
            },
            {
                "provider:network_type": "vlan",
                "provider:physical_network": "physnet2",
                "provider:segmentation_id": 200,
            },
        ]
        assert shown["provider:network_type"] is None
        segments = _cli(url, "network", "segment", "list", "--network", "net1", "-f", "json")
        assert sorted(s["Segment"] for s in segments) == [100, 200]

        subnet = _cli(
            url, "subnet", "create", "--network", "net1", "--network-segment", "seg2",
            "--subnet-range", "10.0.2.0/24", "sub2", "-f", "json",
        )  # fmt: skip
        assert subnet["segment_id"] == seg2["id"]
        assert subnet["gateway_ip"] == "10.0.2.1"
        assert subnet["allocation_pools"] == [{"start": "10.0.2.2", "end": "10.0.2.254"}]
        # A subnet on a segment makes the network routed: no longer one L2 domain.
        assert _cli(url, "network", "show", "net1", "-f", "json")["l2_adjacency"] is False

        policy = _cli(url, "network", "qos", "policy", "create", "bw", "-f", "json")
        rule = _cli(
            url, "network", "qos", "rule", "create", "--type", "minimum-bandwidth",
            "--min-kbps", "1000", "--egress", "bw", "-f", "json",
        )  # fmt: skip
        assert (rule["min_kbps"], rule["direction"]) == (1000, "egress")
        shown_policy = _cli(url, "network", "qos", "policy", "show", "bw", "-f", "json")
        assert shown_policy["id"] == policy["id"]
        assert shown_policy["rules"] == [
            {
                "id": rule["id"],
                "min_kbps": 1000,
                "direction": "egress",
                "qos_policy_id": policy["id"],
                "type": "minimum_bandwidth",
            }
        ]
        # Sharing the policy with every project is an RBAC entry, and makes it shared.
        entry = _cli(
            url, "network", "rbac", "create", "--type", "qos_policy", "--action",
            "access_as_shared", "--target-all-projects", "bw", "-f", "json",
        )  # fmt: skip
        assert (entry["object_id"], entry["target_project_id"]) == (policy["id"], "*")
        entries = _cli(url, "network", "rbac", "list", "--type", "qos_policy", "-f", "json")
        assert [e["ID"] for e in entries] == [entry["id"]]
        assert _cli(url, "network", "qos", "policy", "show", "bw", "-f", "json")["shared"] is True
        rule_types = _cli(url, "network", "qos", "rule", "type", "list", "-f", "json")
        assert {t["Type"] for t in rule_types} == {
            "bandwidth_limit",
            "minimum_bandwidth",
            "minimum_packet_rate",
        }

        port = _cli(
            url, "port", "create", "--network", "net1", "--qos-policy", "bw", "p1", "-f", "json"
        )  # fmt: skip
        assert port["qos_policy_id"] == policy["id"]
        # A routed network defers the address until binding says which segment.
        assert (port["ip_allocation"], port["fixed_ips"], port["status"]) == (
            "deferred",
            [],
            "DOWN",
        )
        assert port["mac_address"].startswith("fa:16:3e:")
        p1 = _cli(url, "port", "show", "p1", "-f", "json")
        bandwidth = group_id(p1["id"], BANDWIDTH)
        assert p1["resource_request"] == {
            "request_groups": [
                {
                    "id": bandwidth,
                    # Any of the network's physical networks, and the port's VNIC type.
                    "required": [
                        "in:CUSTOM_PHYSNET_PHYSNET1,CUSTOM_PHYSNET_PHYSNET2",
                        "CUSTOM_VNIC_TYPE_NORMAL",
                    ],
                    "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                }
            ],
            "same_subtree": [bandwidth],
        }

        assert [(n["Name"], n["Subnets"]) for n in _cli(url, "network", "list", "-f", "json")] == [
            ("net1", [subnet["id"]])
        ]
        subnets = _cli(url, "subnet", "list", "--network", "net1", "-f", "json")
        assert [(s["Name"], s["Subnet"]) for s in subnets] == [("sub2", "10.0.2.0/24")]

        # The agent reports its state over HTTP (Berth's extension of /v2.0/agents).
        report = httpx.post(
            f"{url}/v2.0/agents", json={"agent": AGENT}, headers={"x-auth-token": "admin"}
        )
        assert report.status_code == 201, report.text
        agents = _cli(url, "network", "agent", "list", "-f", "json")
        assert [(a["Agent Type"], a["Host"], a["Alive"], a["State"]) for a in agents] == [
            ("Open vSwitch agent", "compute1", True, True)
        ]
        agent = _cli(url, "network", "agent", "show", agents[0]["ID"], "-f", "json")
        assert agent["configuration"]["bridge_mappings"] == {
            "physnet1": "br-ex",
            "physnet2": "br-data",
        }
        assert agent["availability_zone"] == "nova"

        # p1 asks for bandwidth: binding it needs the allocation the compute side made.
        refusal = _cli_refused(url, "port", "set", "--host", "compute1", "p1")
        assert "409" in refusal and "(allocation-missing)" in refusal, refusal
        # A port without a resource request binds; the deferred address comes from the subnet of
        # the first segment the agent reaches that has one (seg2's).
        _cli(url, "port", "create", "--network", "net1", "p2", "-f", "json")
        _cli(url, "port", "set", "--host", "compute1", "p2")
        p2 = _cli(url, "port", "show", "p2", "-f", "json")
        assert (p2["binding_host_id"], p2["binding_vif_type"]) == ("compute1", "ovs")
        assert p2["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.0.2.2"}]
        listed = _cli(url, "port", "list", "--network", "net1", "-f", "json")
        assert sorted(p["Name"] for p in listed) == ["p1", "p2"]
        by_address = _cli(url, "port", "list", "--fixed-ip", "ip-address=10.0.2.2", "-f", "json")
        assert [p["Name"] for p in by_address] == ["p2"]
        availability = _cli(url, "ip", "availability", "show", "net1", "-f", "json")
        assert (availability["total_ips"], availability["used_ips"]) == (253, 1)

        # Security groups: a group with a rule, a port put in it, and the group kept while used.
        group = _cli(url, "security", "group", "create", "web", "-f", "json")
        _cli(url, "security", "group", "rule", "create", "--protocol", "tcp", "--dst-port",
             "80:81", "--remote-ip", "10.0.0.0/8", "web", "-f", "json")  # fmt: skip
        rules = _cli(url, "security", "group", "rule", "list", "web", "-f", "json")
        assert sorted((r["Ethertype"], r["IP Protocol"] or "", r["Port Range"]) for r in rules) == [
            ("IPv4", "", ""),
            ("IPv4", "tcp", "80:81"),
            ("IPv6", "", ""),
        ]
        _cli(url, "port", "set", "--security-group", "web", "p2")
        assert group["id"] in _cli(url, "port", "show", "p2", "-f", "json")["security_group_ids"]
        assert "409" in _cli_refused(url, "security", "group", "delete", "web")

        # A policy in use, a segment with a subnet: refused until what holds them is gone.
        assert "409" in _cli_refused(url, "network", "qos", "policy", "delete", "bw")
        assert "409" in _cli_refused(url, "network", "segment", "delete", "seg2")
        _cli(url, "port", "delete", "p1", "p2")
        _cli(url, "security", "group", "delete", "web")
        _cli(url, "network", "qos", "policy", "delete", "bw")
        assert _cli(url, "network", "qos", "policy", "list", "-f", "json") == []
        _cli(url, "subnet", "delete", "sub2")
        _cli(url, "network", "segment", "delete", "seg2")
        _cli(url, "network", "delete", "net1")
        assert _cli(url, "network", "list", "-f", "json") == []
        _cli(url, "network", "agent", "delete", agents[0]["ID"])
        assert _cli(url, "network", "agent", "list", "-f", "json") == []


def test_routers_and_floating_ips(tmp_path: Path) -> None:
    with running_network(f"sqlite:///{tmp_path / 'network.db'}") as url:
        _cli(url, "network", "create", "--external", "public", "-f", "json")
        _cli(url, "subnet", "create", "--network", "public", "--subnet-range", "203.0.113.0/24",
             "public-v4", "-f", "json")  # fmt: skip
        _cli(url, "network", "create", "private", "-f", "json")
        _cli(url, "subnet", "create", "--network", "private", "--subnet-range",
                      "10.0.0.0/24", "private-v4", "-f", "json")  # fmt: skip
        router = _cli(url, "router", "create", "r1", "-f", "json")
        _cli(url, "router", "set", "--external-gateway", "public", "r1")
        _cli(url, "router", "add", "subnet", "r1", "private-v4")
        shown = _cli(url, "router", "show", "r1", "-f", "json")
        assert shown["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == (
            "203.0.113.2"
        )
        interfaces = _cli(url, "port", "list", "--router", "r1", "-f", "json")
        # The admin sees the gateway's port beside the interface's.
        addresses = sorted(p["Fixed IP Addresses"][0]["ip_address"] for p in interfaces)
        assert addresses == ["10.0.0.1", "203.0.113.2"]
        port = _cli(url, "port", "create", "--network", "private", "vm-port", "-f", "json")
        floating = _cli(
            url, "floating", "ip", "create", "--port", "vm-port", "public", "-f", "json"
        )
        assert floating["floating_ip_address"] == "203.0.113.3"
        assert (floating["port_id"], floating["router_id"]) == (port["id"], router["id"])
        assert "409" in _cli_refused(url, "router", "remove", "subnet", "r1", "private-v4")
        _cli(url, "floating", "ip", "delete", floating["id"])
        _cli(url, "router", "remove", "subnet", "r1", "private-v4")
        assert len(_cli(url, "port", "list", "--router", "r1", "-f", "json")) == 1
        _cli(url, "router", "delete", "r1")
        assert "r1" in _cli_refused(url, "router", "show", "r1")
