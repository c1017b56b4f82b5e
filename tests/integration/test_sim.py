"""`berth sim`: a workload replayed through the real stack, and the report it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from berth import cli

FLEET = {
    "cells": ["cell1"],
    "hosts": [{
        "name": "cn", "count": 3, "vcpus": 4, "memory_mb": 8192, "disk_gb": 100,
        "reserved_host_memory_mb": 0,
        "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1_000_000,
                                      "ingress_kbps": 1_000_000}}, "packet_rate_kpps": 1000},
    }],
}  # fmt: skip

# 3 hosts of 4 VCPUs (12 in all, at ratio 1.0). Expected, with every VCPU counted:
#   t=0    3 web spread by anti-affinity, one per host             3 accepted (3 VCPUs)
#   t=1    a 4th member of the group                               1 failed: anti-affinity
#   t=10.. 5 servers with a 400 Mbit/s + 100 kpps port (2 fit per
#          1 Gbit/s bridge, so they spread too)                    5 accepted (8 VCPUs)
#   t=50   web-1 deleted                                           (7 VCPUs)
#   t=60.. 9 small servers without ports: 5 VCPUs are left         5 accepted, 4 failed: VCPU
#   t=110  2 big servers (4 VCPUs each): nothing left              2 failed: VCPU
WORKLOAD = {
    "seed": 3,
    "flavors": {"small": {"vcpus": 1, "memory_mb": 1024, "disk_gb": 10},
                "big": {"vcpus": 4, "memory_mb": 4096, "disk_gb": 10}},
    "qos_policies": {"bw": {"min_kbps": 400_000, "direction": "egress", "min_kpps": 100}},
    "networks": {"public": {"physnet": "public"}},
    "server_groups": {"spread": "anti-affinity"},
    "events": [
        {"at": 0, "boot": {"name": "web", "flavor": "small", "count": 3, "group": "spread",
                           "networks": ["public"]}},
        {"at": 1, "boot": {"name": "extra", "flavor": "small", "group": "spread"}},
        {"every": 10, "from": 10, "until": 50,
         "boot": {"name": "qos", "flavor": "small", "ports": [{"network": "public", "qos_policy": "bw"}]}},
        {"at": 50, "delete": "web-1"},
        {"every": 5, "from": 60, "until": 100, "boot": {"flavor": "small"}},
        {"at": 110, "boot": {"flavor": "big", "count": 2}},
    ],
}  # fmt: skip


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture(autouse=True)
def _keep_test_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command sets up the process's logging; the test process keeps pytest's."""
    monkeypatch.setattr(cli, "_configure_logging", lambda level: None)


def _sim(tmp_path: Path, fleet: dict[str, Any], *extra: str) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "report"
    code = cli.main([
        "sim", "--fleet", str(_write(tmp_path / "fleet.yaml", fleet)),
        "--workload", str(_write(tmp_path / "workload.yaml", WORKLOAD)), "--out", str(out), *extra,
    ])  # fmt: skip
    assert code == 0
    return out, json.loads((out / "report.json").read_text())


def _png_width(path: Path) -> int:
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG"
        return int(image.size[0])


def test_report_counts_what_the_scheduler_did(tmp_path: Path) -> None:
    fleet = {**FLEET, "hosts": [{**FLEET["hosts"][0], "cpu_allocation_ratio": 1.0}]}
    out, report = _sim(tmp_path, fleet)

    [run] = report["runs"]
    summary = run["summary"]
    assert (summary["boots"], summary["accepted"], summary["failed"]) == (20, 13, 7)
    assert summary["acceptance_rate"] == pytest.approx(13 / 20, abs=1e-4)
    assert summary["deleted"] == 1
    by_codes = {tuple(r["codes"]): r["count"] for r in summary["failures_by_reason"]}
    assert by_codes[("insufficient VCPU",)] == 6
    [group_codes] = [codes for codes in by_codes if codes != ("insufficient VCPU",)]
    assert any(code.startswith("ServerGroupAntiAffinityFilter") for code in group_codes)
    failed = {f["server"]: f for f in run["failures"]}
    assert set(failed) == {"extra-1", "small-6", "small-7", "small-8", "small-9", "big-1", "big-2"}
    assert failed["big-1"]["message"].startswith("No valid host was found.")

    assert summary["peak_utilisation"]["VCPU"] == 1.0
    # 5 ports of 400 Mbit/s on 3 Gbit/s; 5 x 100 kpps on 3000.
    assert summary["peak_utilisation"]["bandwidth egress public"] == pytest.approx(2 / 3, abs=1e-3)
    assert summary["peak_utilisation"]["packet rate"] == pytest.approx(1 / 6, abs=1e-3)
    assert summary["peak_utilisation"]["bandwidth ingress public"] == 0.0
    samples = run["samples"]
    assert [s["time"] for s in samples][:3] == [0.0, 0.0, 1.0]
    # Before the big servers every host still had a free VCPU... and none after: every host is
    # too full for the largest flavor (4 VCPUs), so all free memory is stranded.
    assert samples[-1]["used"]["VCPU"] == 12
    assert samples[-1]["fragmentation"]["MEMORY_MB"] == 1.0
    at_10 = next(s for s in samples if s["time"] == 10)
    assert at_10["fragmentation"]["VCPU"] == 1.0 and at_10["active"] == 4

    for name in ("utilisation.png", "fragmentation.png", "outcomes.png", "failures.png"):
        assert _png_width(out / name) > 300
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 4
    assert "<td>65.0 %</td>" in page and "insufficient VCPU" in page


def test_compare_two_scheduler_settings_side_by_side(tmp_path: Path) -> None:
    tight = _write(tmp_path / "tight.yaml", {"cpu_allocation_ratio": 1.0})
    loose = _write(
        tmp_path / "loose.yaml",
        {"cpu_allocation_ratio": 2.0, "weigher_multipliers": {"RAMWeigher": -1.0}},
    )
    out, report = _sim(tmp_path, FLEET, "--scheduler", str(tight), "--scheduler", str(loose))

    first, second = (run["summary"] for run in report["runs"])
    assert (first["scenario"], second["scenario"]) == ("tight", "loose")
    assert first["failed"] == 7
    # Twice the VCPUs: every small server fits; the anti-affinity refusal stays.
    assert second["accepted"] > first["accepted"] and second["failed"] < 4
    refused = [f["server"] for f in report["runs"][1]["failures"]]
    assert "extra-1" in refused and not any(name.startswith("small") for name in refused)
    page = (out / "report.html").read_text()
    assert "<th>tight</th><th>loose</th>" in page
    # One panel per run, side by side: twice a single run's 520 pixels.
    assert _png_width(out / "utilisation.png") > 1000


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"events": [{"at": 0, "boot": {"flavor": "huge"}}]},
         "events[0].boot.flavor: 'huge' is not one of the workload's flavors"),
        ({"events": [{"at": 5, "delete": "web-9"}]},
         "delete of 'web-9' at 5 s: no server of that name was booted before then"),
        ({"events": [{"every": 5, "boot": {"flavor": "small"}}]},
         "events[0]: Value error, every and rate repeat a boot"),
    ],
)  # fmt: skip
def test_a_bad_workload_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    workload = _write(tmp_path / "bad.yaml", {**WORKLOAD, **change})
    fleet = _write(tmp_path / "fleet.yaml", FLEET)
    code = cli.main(
        ["sim", "--fleet", str(fleet), "--workload", str(workload), "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert message.replace("Value error, ", "") in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_bad_fleet_or_settings_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = _write(tmp_path / "workload.yaml", WORKLOAD)
    fleet = _write(
        tmp_path / "fleet.yaml", {"cells": ["cell1"], "hosts": [{"name": "cn", "cell": "cell9"}]}
    )
    settings = _write(tmp_path / "settings.yaml", {"weigher_multipliers": {"Nope": 1.0}})
    out = str(tmp_path / "o")
    assert cli.main(["sim", "--fleet", str(fleet), "--workload", str(workload), "--out", out]) == 2
    assert "fleet.yaml: host cn: cell 'cell9' is not in cells" in capsys.readouterr().err
    good = _write(tmp_path / "good.yaml", FLEET)
    code = cli.main(["sim", "--fleet", str(good), "--workload", str(workload), "--out", out,
                     "--scheduler", str(settings)])  # fmt: skip
    assert code == 2
    assert "settings.yaml: weigher_multipliers: no weigher Nope" in capsys.readouterr().err
