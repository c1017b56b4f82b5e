"""Berth's own versions of the fixtures upstream's gabbi files name.

Each sets the environment variables the upstream fixture of the same name sets and builds the same
provider trees, but through Berth's HTTP API. The trees are facts of upstream's test data; the code
is ours.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import yaml
from gabbi.fixture import GabbiFixture

from berth.placement.policy import PolicyEnforcer, default_rules
from berth.placement.service import PlacementService
from tests.conftest import wsgi_client
from tools.upstream_gabbits.builder import Builder

CURRENT: dict[str, PlacementService] = {}

_FRESH = [
    "RP_UUID",
    "RP_NAME",
    "RP_UUID1",
    "RP_NAME1",
    "RP_UUID2",
    "RP_NAME2",
    "PROJECT_ID",
    "ADMIN_PROJECT_ID",
    "SERVICE_PROJECT_ID",
    "USER_ID",
    "PROJECT_ID_ALT",
    "USER_ID_ALT",
    "INSTANCE_UUID",
    "MIGRATION_UUID",
    "CONSUMER_UUID",
    "PARENT_PROVIDER_UUID",
    "ALT_PARENT_PROVIDER_UUID",
]


def _set(**values: str) -> None:
    os.environ.update(values)


def _new() -> str:
    return str(uuid.uuid4())


class APIFixture(GabbiFixture):
    """Fresh identifiers; upstream's fixtures set enforce_new_defaults (false but for the
    secure-RBAC files) and leave scope to oslo.policy, which always checks it: Berth's default."""

    secure_rbac = False

    def start_fixture(self) -> None:
        for name in _FRESH:
            os.environ[name] = _new()
        _set(
            CUSTOM_RES_CLASS="CUSTOM_IRON_NFV",
            CUSTOM_RES_CLASS1="CUSTOM_IRON_NFV1",
            CUSTOM_RES_CLASS2="CUSTOM_IRON_NFV2",
        )
        service = CURRENT["service"]
        service.settings.enforce_new_defaults = self.secure_rbac
        service.policy = PolicyEnforcer(service.settings)

    def stop_fixture(self) -> None:
        return None

    def build(self) -> Builder:
        client = wsgi_client(CURRENT["service"])
        client.headers.update(
            {
                "x-auth-token": "admin",
                "accept": "application/json",
                "openstack-api-version": "placement latest",
            }
        )
        return Builder(client)


class SecureRBACPolicyFixture(APIFixture):
    secure_rbac = True


class LegacyRBACPolicyFixture(APIFixture):
    secure_rbac = False


class OpenPolicyFixture(APIFixture):
    """Every rule but admin_api open to anyone."""

    def start_fixture(self) -> None:
        super().start_fixture()
        rules = {r.name: "@" for r in default_rules() if r.name != "admin_api"}
        handle, path = tempfile.mkstemp(suffix=".yaml")
        with os.fdopen(handle, "w") as f:
            yaml.safe_dump(rules, f)
        service = CURRENT["service"]
        service.settings.policy_file = path
        service.policy = PolicyEnforcer(service.settings)


class CORSFixture(APIFixture):
    def start_fixture(self) -> None:
        super().start_fixture()
        CURRENT["service"].settings.cors_allowed_origins = ["http://valid.example.com"]


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048 in steps of 10) and three consumers' allocations."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        env = os.environ
        _set(ALT_USER_ID=_new(), CONSUMER_0=_new(), CONSUMER_ID=_new(), ALT_CONSUMER_ID=_new())
        rp = env["RP_UUID"]
        b.client.post("/resource_providers", json={"name": env["RP_NAME"], "uuid": rp})
        b.inventory(rp, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
        b.inventory(rp, "VCPU", 10, max_unit=10)
        project, user, alt_user = env["PROJECT_ID"], env["USER_ID"], env["ALT_USER_ID"]
        b.allocate(env["CONSUMER_0"], project, user, {rp: {"DISK_GB": 1000}})
        b.allocate(env["CONSUMER_ID"], project, user, {rp: {"VCPU": 6}})
        b.allocate(env["ALT_CONSUMER_ID"], project, alt_user, {rp: {"DISK_GB": 20, "VCPU": 1}})
        _set(ALT_RP_UUID=_new(), ALT_RP_NAME=_new())


class SharedStorageFixture(APIFixture):
    """Two compute nodes with NUMA and PF children, two sharing disks, one aggregate."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        agg = _new()
        ids = {name: b.provider(name, agg) for name in ("cn1", "cn2", "ss", "ss2")}
        for cn, n in (("cn1", 1), ("cn2", 2)):
            for i in (1, 2):
                numa = b.provider(f"numa{n}_{i}", parent=ids[cn])
                ids[f"numa{n}_{i}"] = numa
                ids[f"pf{n}_{i}"] = b.provider(f"pf{n}_{i}", parent=numa)
        _set(AGG_UUID=agg, **{f"{k.upper()}_UUID": v for k, v in ids.items()})
        for cn in ("cn1", "cn2"):
            b.inventory(ids[cn], "VCPU", 24, allocation_ratio=16.0)
            b.inventory(ids[cn], "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
        b.traits(ids["cn1"], "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        b.inventory(ids["cn2"], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        for shared in ("ss", "ss2"):
            b.inventory(ids[shared], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            b.traits(ids[shared], "MISC_SHARES_VIA_AGGREGATE")
        for pf in ("pf1_1", "pf1_2", "pf2_1", "pf2_2"):
            b.inventory(ids[pf], "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Resourceless compute nodes with VCPU on NUMA children, disks shared by aggregates."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        agg_a, agg_b, agg_c = _new(), _new(), _new()
        ids = {
            "cn1": b.provider("cn1", agg_a),
            "cn2": b.provider("cn2", agg_a, agg_b),
            "ss1": b.provider("ss1", agg_a),
            "ss2": b.provider("ss2", agg_c),
        }
        ids["numa1_1"] = b.provider("numa1_1", agg_c, parent=ids["cn1"])
        ids["numa1_2"] = b.provider("numa1_2", parent=ids["cn1"])
        ids["numa2_1"] = b.provider("numa2_1", parent=ids["cn2"])
        ids["numa2_2"] = b.provider("numa2_2", parent=ids["cn2"])
        _set(
            AGGA_UUID=agg_a,
            AGGB_UUID=agg_b,
            AGGC_UUID=agg_c,
            **{f"{k.upper()}_UUID": v for k, v in ids.items()},
        )
        for numa in ("numa1_1", "numa1_2", "numa2_1", "numa2_2"):
            b.inventory(ids[numa], "VCPU", 24, allocation_ratio=16.0)
        for shared in ("ss1", "ss2"):
            b.inventory(ids[shared], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            b.traits(ids[shared], "MISC_SHARES_VIA_AGGREGATE")


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with local disk and no sharing."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        _set(AGGA_UUID=_new(), AGGB_UUID=_new(), AGGC_UUID=_new())
        for n in (1, 2, 3):
            cn = b.provider(f"cn{n}")
            os.environ[f"CN{n}_UUID"] = cn
            b.inventory(cn, "VCPU", 24)
            b.inventory(cn, "MEMORY_MB", 128 * 1024)
            b.inventory(cn, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers over aggregates A, B and C."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        b.client.put("/resource_classes/CUSTOM_NET_MBPS")
        agg_a, agg_b, agg_c = _new(), _new(), _new()
        _set(AGGA=agg_a, AGGB=agg_b, AGGC=agg_c)
        left = b.provider("cn_left", agg_a)
        for rc, total in (
            ("VCPU", 8),
            ("MEMORY_MB", 4096),
            ("DISK_GB", 500),
            ("VGPU", 8),
            ("SRIOV_NET_VF", 8),
            ("CUSTOM_NET_MBPS", 4000),
        ):
            b.inventory(left, rc, total)
        b.traits(
            left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC",
            "CUSTOM_FOO",
        )  # fmt: skip
        middle = b.provider("cn_middle", agg_a, agg_b)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8)):
            b.inventory(middle, rc, total)
        b.inventory(middle, "CUSTOM_NET_MBPS", 4000)
        b.traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS")
        right = b.provider("cn_right", agg_b, agg_c)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
            b.inventory(right, rc, total)
        b.inventory(right, "VGPU", 8, max_unit=2)
        b.traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")
        disk1 = b.provider("shr_disk_1", agg_a)
        b.inventory(disk1, "DISK_GB", 1000)
        b.traits(disk1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
        disk2 = b.provider("shr_disk_2", agg_a, agg_b)
        b.inventory(disk2, "DISK_GB", 1000)
        b.traits(disk2, "MISC_SHARES_VIA_AGGREGATE")
        net = b.provider("shr_net", agg_c)
        b.inventory(net, "SRIOV_NET_VF", 16)
        b.inventory(net, "CUSTOM_NET_MBPS", 40000)
        b.traits(net, "MISC_SHARES_VIA_AGGREGATE")
        _set(
            CN_LEFT=left,
            CN_MIDDLE=middle,
            CN_RIGHT=right,
            SHR_DISK_1=disk1,
            SHR_DISK_2=disk2,
            SHR_NET=net,
        )


class NUMANetworkFixture(APIFixture):
    """Two compute hosts with NUMA nodes, devices, network agents and NICs (see upstream)."""

    def roots(self, b: Builder) -> tuple[str, str]:
        return b.provider("cn1"), b.provider("cn2")

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        env = os.environ
        agg = _new()
        ss1 = b.provider("ss1", agg)
        b.traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
        b.inventory(ss1, "DISK_GB", 2000)
        cn1, cn2 = self.roots(b)
        _set(AGGA_UUID=agg, SS1_UUID=ss1, CN1_UUID=cn1, CN2_UUID=cn2)
        b.aggregates(cn1, agg)
        b.traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        numas = []
        for i in (0, 1):
            numa = b.provider(f"numa{i}", parent=cn1)
            b.traits(numa, "HW_NUMA_ROOT", *(["CUSTOM_FOO"] if i == 1 else []))
            b.inventory(numa, "VCPU", 4)
            numas.append(numa)
            env[f"NUMA{i}_UUID"] = numa
        b.inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
        b.inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
        project, user = _new(), _new()
        b.allocate(_new(), project, user, {numas[0]: {"VCPU": 2}})
        fpga = b.provider("fpga0", parent=numas[0])
        b.inventory(fpga, "FPGA", 1)
        pgpu = b.provider("pgpu0", parent=numas[0])
        b.inventory(pgpu, "VGPU", 8)
        _set(FPGA0_UUID=fpga, PGPU0_UUID=pgpu)
        for i in (0, 1):
            fpga = b.provider(f"fpga1_{i}", parent=numas[1])
            b.inventory(fpga, "FPGA", 1)
            env[f"FPGA1_{i}_UUID"] = fpga
        agent = b.provider("sriov_agent", parent=cn1)
        b.traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        env["SRIOV_AGENT_UUID"] = agent
        for i in (1, 2):
            dev = b.provider(f"esn{i}", parent=agent)
            b.traits(dev, f"CUSTOM_PHYSNET{i}")
            b.inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
            env[f"ESN{i}_UUID"] = dev
        agent = b.provider("ovs_agent", parent=cn1)
        b.traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        env["OVS_AGENT_UUID"] = agent
        bridge = b.provider("br_int", parent=agent)
        b.traits(bridge, "CUSTOM_PHYSNET0")
        b.inventory(bridge, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
        env["BR_INT_UUID"] = bridge
        b.aggregates(cn2, agg)
        b.inventory(cn2, "VCPU", 8)
        b.allocate(_new(), project, user, {cn2: {"VCPU": 3}})
        b.inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
        b.inventory(cn2, "DISK_GB", 1000)
        b.traits(cn2, "CUSTOM_FOO")
        nics = []
        for i in (1, 2, 3):
            nic = b.provider(f"nic{i}", parent=cn2)
            b.traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(nic)
            env[f"NIC{i}_UUID"] = nic
        for i in (1, 2):
            pf = b.provider(f"pf1_{i}", parent=nics[0])
            b.traits(pf, f"CUSTOM_PHYSNET{i}")
            b.inventory(pf, "CUSTOM_VF", 4)
            env[f"PF1_{i}_UUID"] = pf
        for i in (0, 1, 2, 3):
            pf = b.provider(f"pf2_{i + 1}", parent=nics[1])
            b.traits(pf, f"CUSTOM_PHYSNET{(i % 2) + 1}")
            b.inventory(pf, "CUSTOM_VF", 2)
            env[f"PF2_{i + 1}_UUID"] = pf
        pf = b.provider("pf3_1", parent=nics[2])
        b.traits(pf, "CUSTOM_PHYSNET1")
        b.inventory(pf, "CUSTOM_VF", 8)
        env["PF3_1_UUID"] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """The same hosts, each under an empty parent, both under one empty grandparent."""

    def roots(self, b: Builder) -> tuple[str, str]:
        grandparent = b.provider("gp1")
        p1 = b.provider("p1", parent=grandparent)
        p2 = b.provider("p2", parent=grandparent)
        return b.provider("cn1", parent=p1), b.provider("cn2", parent=p2)


# Per host: (bridge name, bandwidth, physnet) for OVS and (PF name, bandwidth, physnet) for SR-IOV.
_QOS_HOSTS: dict[str, tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]] = {
    "compute0": ([("br_ex", 5000, "OTHER")], [("pf0", 10000, "OTHER")]),
    "compute1": ([("br_ex", 5000, "MSN_S1")], [("pf0", 10000, "MSN_S1")]),
    "compute2": ([("br_ex", 5000, "MSN_S2")], [("pf0", 10000, "MSN_S2")]),
    "compute3": (
        [("br_ex", 1000, "MSN_S1"), ("br_ex2", 1000, "MSN_S2")],
        [("pf0", 1000, "MSN_S1"), ("pf1", 1000, "MSN_S2")],
    ),
}
_SRIOV_VNICS = (
    "CUSTOM_VNIC_TYPE_DIRECT",
    "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
    "CUSTOM_VNIC_TYPE_MACVTAP",
)


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Hosts as a network service with QoS would report them, on multi-segment networks."""

    def start_fixture(self) -> None:
        super().start_fixture()
        b = self.build()
        env = os.environ
        for host, (bridges, pfs) in _QOS_HOSTS.items():
            root = b.provider(host)
            env[host] = root
            for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
                b.inventory(root, rc, total)
            ovs = b.provider(f"{host}:Open vSwitch agent", parent=root)
            env[f"{host}:ovs_agent"] = ovs
            b.inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
            b.traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
            for key, bandwidth, physnet in bridges:
                bridge = b.provider(f"{host}:Open vSwitch agent:{key}", parent=ovs)
                env[f"{host}:{key}"] = bridge
                self._bandwidth(b, bridge, bandwidth)
                b.traits(bridge, "CUSTOM_VNIC_TYPE_NORMAL", f"CUSTOM_PHYSNET_{physnet}")
            sriov = b.provider(f"{host}:NIC Switch agent", parent=root)
            env[f"{host}:sriov_agent"] = sriov
            b.traits(sriov, *_SRIOV_VNICS)
            for key, bandwidth, physnet in pfs:
                pf = b.provider(f"{host}:NIC Switch agent:{key}", parent=sriov)
                env[f"{host}:{key}"] = pf
                self._bandwidth(b, pf, bandwidth)
                b.traits(pf, *_SRIOV_VNICS, f"CUSTOM_PHYSNET_{physnet}")

    @staticmethod
    def _bandwidth(b: Builder, rp: str, kbps: int) -> None:
        b.inventory(rp, "NET_BW_EGR_KILOBIT_PER_SEC", kbps)
        b.inventory(rp, "NET_BW_IGR_KILOBIT_PER_SEC", kbps)
