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
