"""The capacity view in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright against ``berth up`` with its Keystone. It logs in through the page's form and checks
what a person sees: the host rows and their used-versus-capacity numbers (Placement's), filtering,
paging, a host's servers, the explanation of a boot that found no host, and the what-if form.
A screenshot of the page is kept in ``artifacts/`` (its path is printed)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from berth.compute.api.routes import ROUTES as COMPUTE_ROUTES
from tests.integration.server import running_berth_up

# Debian's chromium; BERTH_TEST_CHROMIUM names another build (or none: the test skips).
CHROMIUM = Path(os.environ.get("BERTH_TEST_CHROMIUM", "/usr/bin/chromium"))
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
WHAT_IF = "/v2.1/os-berth-what-if"
IMAGE = "8b2d4e07-6c5f-4d3a-9e6b-2f3c1a0d9e11"  # berth up's cirros
COMPUTE = {"openstack-api-version": "compute 2.64"}
PLACEMENT = {"openstack-api-version": "placement 1.39"}
OVS = {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1_000_000,
                             "ingress_kbps": 1_000_000}}, "packet_rate_kpps": 500}  # fmt: skip
# Twelve hosts: more than one page of ten.
FLEET = {
    "cells": ["cell1", "cell2"],
    "hosts": [
        {"name": "cn", "count": 6, "cell": "cell1", "vcpus": 16, "memory_mb": 32768,
         "disk_gb": 200, "ovs": OVS},
        {"name": "edge", "count": 6, "cell": "cell2", "vcpus": 8, "memory_mb": 16384,
         "disk_gb": 100, "ovs": OVS},
    ],
}  # fmt: skip

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)",
)


def _ok(answer: httpx.Response) -> Any:
    assert answer.is_success, f"{answer.request.method} {answer.request.url}: {answer.text}"
    return answer.json() if answer.content else None


@pytest.fixture(scope="module")
def cloud(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str, str, httpx.Client]]:
    """``berth up`` with Keystone: its URL, the admin's and the demo member's passwords and a
    client with the admin's token."""
    tmp = tmp_path_factory.mktemp("dashboard")
    fleet = tmp / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    with running_berth_up(str(tmp / "data"), str(fleet), auth="keystone") as url:
        clouds = yaml.safe_load((tmp / "data" / "clouds.yaml").read_text())
        password = clouds["clouds"]["berth"]["auth"]["password"]
        demo_password = clouds["clouds"]["berth-demo"]["auth"]["password"]
        scope = {"project": {"name": "admin", "domain": {"name": "Default"}}}
        user = {"name": "admin", "domain": {"name": "Default"}, "password": password}
        login = {"auth": {"identity": {"methods": ["password"], "password": {"user": user}},
                          "scope": scope}}  # fmt: skip
        token = httpx.post(f"{url}/identity/v3/auth/tokens", json=login, timeout=60)
        token.raise_for_status()
        headers = {"x-auth-token": token.headers["x-subject-token"]}
        project = token.json()["token"]["project"]["id"]
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            # The server that finds no host must get past the quota to the scheduler.
            unlimited = {"quota_set": {"cores": -1, "ram": -1, "instances": -1}}
            _ok(client.put(f"/compute/v2.1/os-quota-sets/{project}", json=unlimited))
            yield url, password, demo_password, client


def _boot(client: httpx.Client, name: str, flavor: str, networks: Any) -> dict[str, Any]:
    body = {"server": {"name": name, "flavorRef": flavor, "imageRef": IMAGE, "networks": networks}}
    server_id = _ok(client.post("/compute/v2.1/servers", json=body, headers=COMPUTE))["server"][
        "id"
    ]
    for _ in range(600):
        server = _ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=COMPUTE))["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return server  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"{name} still building")


def _qos_port(client: httpx.Client) -> str:
    net = _ok(client.post("/networking/v2.0/networks", json={"network": {
        "name": "public", "shared": True, "provider:network_type": "flat",
        "provider:physical_network": "public"}}))["network"]["id"]  # fmt: skip
    _ok(client.post("/networking/v2.0/subnets", json={"subnet": {
        "network_id": net, "ip_version": 4, "cidr": "192.0.2.0/24"}}))  # fmt: skip
    policy = _ok(client.post("/networking/v2.0/qos/policies",
                             json={"policy": {"name": "bw", "shared": True}}))["policy"]["id"]  # fmt: skip
    _ok(client.post(f"/networking/v2.0/qos/policies/{policy}/minimum_bandwidth_rules",
                    json={"minimum_bandwidth_rule": {"min_kbps": 250_000}}))  # fmt: skip
    port = {"network_id": net, "qos_policy_id": policy}
    return str(_ok(client.post("/networking/v2.0/ports", json={"port": port}))["port"]["id"])


def _amount(client: httpx.Client, provider: str, rc: str) -> tuple[int, int]:
    """(used, capacity) of a provider's class, as Placement's own API answers."""
    base = f"/placement/resource_providers/{provider}"
    inventory = _ok(client.get(f"{base}/inventories", headers=PLACEMENT))["inventories"][rc]
    used = _ok(client.get(f"{base}/usages", headers=PLACEMENT))["usages"].get(rc, 0)
    return used, int((inventory["total"] - inventory["reserved"]) * inventory["allocation_ratio"])


def test_a_person_reads_the_fleet_in_a_browser(cloud: tuple[str, str, str, httpx.Client]) -> None:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="needs Playwright (the test extras)"
    )
    expect, sync_playwright = sync_api.expect, sync_api.sync_playwright

    url, password, demo_password, client = cloud
    placed = _boot(client, "web-1", "3", [{"port": _qos_port(client)}])
    assert placed["status"] == "ACTIVE"
    host = placed["OS-EXT-SRV-ATTR:host"]
    huge = {"flavor": {"name": "huge", "vcpus": 999, "ram": 1024, "disk": 1, "id": "huge"}}
    _ok(client.post("/compute/v2.1/flavors", json=huge))
    failed = _boot(client, "too-big", "huge", "none")
    assert failed["status"] == "ERROR"
    node = _ok(client.get("/placement/resource_providers", params={"name": host},
                          headers=PLACEMENT))["resource_providers"][0]["uuid"]  # fmt: skip

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"{url}/dashboard")
            # Logging in through the page's form, with the embedded Keystone.
            expect(page.locator("#login")).to_be_visible()
            page.fill("input[name=password]", password)
            page.click("#login-form button[type=submit]")
            rows = page.locator("#hosts tbody tr[data-host]")
            expect(rows).to_have_count(12)
            expect(page.locator("#page-info")).to_have_text("page 1 of 1 · 12 hosts")

            # The busy host's numbers are Placement's.
            row = page.locator(f"#hosts tbody tr[data-host='{host}']")
            used, capacity = _amount(client, node, "VCPU")
            assert used == 2  # m1.medium's
            expect(row.locator("[data-rc=VCPU] .amount")).to_have_text(f"{used} / {capacity}")
            used, capacity = _amount(client, node, "MEMORY_MB")
            expect(row.locator("[data-rc=MEMORY_MB] .amount")).to_have_text(
                f"{used:,} / {capacity:,} MiB"
            )
            bridge = row.locator("[data-device='Open vSwitch agent:br-ex']")
            egress = bridge.locator("[data-rc=NET_BW_EGR_KILOBIT_PER_SEC]")
            expect(egress.locator(".amount")).to_have_text("250 Mbit/s / 1 Gbit/s")
            allocations = _ok(client.get(f"/placement/allocations/{placed['id']}",
                                         headers=PLACEMENT))["allocations"]  # fmt: skip
            (held,) = [rp for rp, a in allocations.items()
                       if "NET_BW_EGR_KILOBIT_PER_SEC" in a["resources"]]  # fmt: skip
            used, capacity = _amount(client, held, "NET_BW_EGR_KILOBIT_PER_SEC")
            expect(egress).to_have_attribute("data-used", str(used))
            expect(egress).to_have_attribute("data-capacity", str(capacity))
            expect(bridge.locator(".physnet")).to_have_text("public")
            expect(row.locator("td.servers")).to_have_text("1")

            # Filtering narrows the rows; a menu picks a cell.
            page.fill("#filters input[name=q]", "edge")
            expect(rows).to_have_count(6)
            assert all(h.startswith("edge") for h in rows.evaluate_all(
                "rows => rows.map(r => r.dataset.host)"))  # fmt: skip
            page.fill("#filters input[name=q]", "")
            page.select_option("#filters select[name=cell]", "cell1")
            expect(rows).to_have_count(6)
            page.select_option("#filters select[name=cell]", "")

            # Paging: ten a page.
            page.select_option("#filters select[name=per_page]", "10")
            expect(rows).to_have_count(10)
            expect(page.locator("#page-info")).to_have_text("page 1 of 2 · 12 hosts")
            page.click("#next")
            expect(rows).to_have_count(2)
            expect(page.locator("#page-info")).to_have_text("page 2 of 2 · 12 hosts")
            expect(page.locator("#next")).to_be_disabled()
            page.click("#prev")
            expect(rows).to_have_count(10)
            page.select_option("#filters select[name=per_page]", "50")
            expect(rows).to_have_count(12)

            # Filters changed quickly: an answer that comes back late never replaces a later one.
            held: list[Any] = []
            page.route("**/api/hosts?*cell=cell1*", lambda route: held.append(route))
            page.select_option("#filters select[name=cell]", "cell1")
            for _ in range(100):
                if held:
                    break
                page.wait_for_timeout(20)
            page.select_option("#filters select[name=cell]", "")
            page.select_option("#filters select[name=per_page]", "10")
            expect(rows).to_have_count(10)
            (late,) = held
            late.continue_()
            page.unroute("**/api/hosts?*cell=cell1*")
            page.wait_for_timeout(300)
            expect(rows).to_have_count(10)
            expect(page.locator("#page-info")).to_have_text("page 1 of 2 · 12 hosts")
            page.select_option("#filters select[name=per_page]", "50")
            expect(rows).to_have_count(12)

            # A host's servers.
            row.locator("td.host button").click()
            servers = page.locator("#servers tbody tr[data-server]")
            expect(servers).to_have_count(1)
            expect(servers.first).to_contain_text("web-1")
            expect(page.locator("#servers-host")).to_have_text(host)

            # The latest decisions: the boot that found no host, explained.
            decision = page.locator(f"#decisions li[data-server='{failed['id']}']")
            expect(decision).to_have_attribute("data-outcome", "no host")
            explanation = decision.locator(".explanation")
            expect(explanation.locator("summary")).to_contain_text("0/12 hosts are available")
            expect(explanation.locator("tr.short")).to_contain_text("no provider has 999 VCPU")
            expect(page.locator(f"#decisions li[data-server='{placed['id']}']")).to_contain_text(
                f"on {host}"
            )

            # The what-if form asks Compute's what-if extension and shows what it answers;
            # a Berth without it shows the API's refusal.
            page.click("#what-if-form button[type=submit]")
            if WHAT_IF in COMPUTE_ROUTES:
                expect(page.locator("#what-if-summary")).to_contain_text("more like it")
                expect(page.locator("#what-if-answer")).to_contain_text('"what_if"')
            else:
                expect(page.locator("#what-if-error")).to_contain_text(
                    "POST /compute/v2.1/os-berth-what-if: 404"
                )

            ARTIFACTS.mkdir(exist_ok=True)
            shot = ARTIFACTS / "dashboard.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"\ndashboard screenshot: {shot}")

            # Logging out forgets the token.
            page.click("#logout")
            expect(page.locator("#login")).to_be_visible()

            # The fleet is the admins': the demo project's member is told so.
            page.fill("input[name=user]", "demo")
            page.fill("input[name=password]", demo_password)
            page.fill("input[name=project]", "demo")
            page.click("#login-form button[type=submit]")
            expect(page.locator("#error")).to_contain_text(
                "403: Policy doesn't allow os_compute_api:os-hypervisors:list-detail"
            )
            expect(rows).to_have_count(0)
        finally:
            browser.close()
