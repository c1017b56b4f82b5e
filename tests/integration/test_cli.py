"""The `berth` command's administrative tasks, run as an operator would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from berth.placement.store import migrate


def _berth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "berth.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_db_sync_creates_then_reports_current(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placement.db'}"
    assert _berth("manage", "db", "version", "--database-url", url).stdout.strip() == "empty"
    first = _berth("manage", "db", "sync", "--database-url", url)
    assert first.returncode == 0, first.stderr
    assert "upgraded" in first.stdout
    again = _berth("manage", "db", "sync", "--database-url", url)
    assert "current" in again.stdout
    version = _berth("manage", "db", "version", "--database-url", url)
    assert version.stdout.strip() == migrate.head_revision()


def test_policy_sample_lists_upstream_rules() -> None:
    sample = _berth("policy", "sample")
    assert sample.returncode == 0, sample.stderr
    assert '#"placement:resource_providers:list": "rule:admin_or_service_api"' in sample.stdout


def test_no_command_prints_help() -> None:
    done = _berth()
    assert done.returncode == 2
    assert "serve" in done.stdout


def test_cells_are_created_listed_and_their_hosts_discovered(tmp_path: Path) -> None:
    import os

    from berth.common.db import Database
    from berth.compute.db import compute_nodes, services
    from berth.compute.db import migrate as compute_migrate

    env = {**os.environ, "BERTH_DATA_DIR": str(tmp_path)}

    def berth(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "berth.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    cell1_url = f"sqlite:///{tmp_path / 'cell1.db'}"
    cell0 = berth(
        "manage",
        "cell",
        "create",
        "--name",
        "cell0",
        "--cell0",
        "--database-url",
        f"sqlite:///{tmp_path / 'cell0.db'}",
    )
    assert cell0.returncode == 0, cell0.stderr
    assert cell0.stdout.strip() == "00000000-0000-0000-0000-000000000000"
    assert berth("manage", "cell", "create", "--name", "cell1", "--database-url", cell1_url,
                 "--transport-url", "memory://cell1").returncode == 0  # fmt: skip
    # A bus nothing could use is refused before the cell is mapped.
    kafka = berth("manage", "cell", "create", "--name", "cell2", "--database-url", cell1_url,
                  "--transport-url", "kafka://broker:9092")  # fmt: skip
    assert kafka.returncode == 2
    assert "bus URL 'kafka://broker:9092': unknown scheme 'kafka'" in kafka.stderr
    twice = berth("manage", "cell", "create", "--name", "cell1", "--database-url", cell1_url)
    assert (twice.returncode, twice.stderr.strip()) == (
        1,
        "error: a cell with this cell name exists already",
    )
    listed = berth("manage", "cell", "list").stdout.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["cell0", "cell1"]
    # A compute host registers itself in its cell's database; discovery maps it, once.
    cell_db = Database(cell1_url)
    compute_migrate.sync_cell(cell_db)
    with cell_db.write() as conn:
        service = services.get_or_create(conn, "cn1", "nova-compute", "compute")
        compute_nodes.upsert(
            conn, service["id"], "cn1", "cn1", {"vcpus": 1, "memory_mb": 1, "local_gb": 1}
        )
    cell_db.dispose()
    assert berth("manage", "cell", "discover-hosts").stdout.strip() == "mapped cn1 to cell1"
    assert berth("manage", "cell", "discover-hosts").stdout.strip() == ""
