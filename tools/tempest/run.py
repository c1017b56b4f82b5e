"""Tempest against a fresh ``berth up`` of this checkout; called by ``scripts/tempest``.

    .venv/bin/python -m tools.tempest.run --tempest-venv DIR [--concurrency 2] [--hosts 3]
        [--workdir DIR] [--results FILE] [--exclude REGEX] [REGEX]

Starts ``berth up`` on a new data directory in WORKDIR (a new temporary directory unless given),
seeds it (``cloud.prepare``), writes WORKDIR/tempest/etc/tempest.conf (``conf.render``), runs
``tempest run`` there, prints passed/failed/skipped per area and writes the results file (failed
tests with their first error line, skipped tests by reason). ``berth up`` is stopped however the
run ends. The exit status is 0 when no test failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from tools.tempest import conf, report
from tools.tempest.cloud import BerthUp, prepare

DEFAULT_REGEX = (
    r"^(tempest\.api\.compute|tempest\.api\.network|neutron_tempest_plugin\.api\.test_qos)"
)
REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="berth-tempest-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = (args.results or workdir / "results.txt").resolve()
    venv_bin = args.tempest_venv.resolve() / "bin"
    print(f"workdir: {workdir}", flush=True)
    # SIGTERM (a CI timeout, a kill) unwinds like Ctrl-C, so that berth up is stopped.
    signal.signal(signal.SIGTERM, _exit)
    started = time.monotonic()
    with BerthUp(workdir / "berth-data", workdir / "berth-up.log", args.hosts) as up:
        print(f"berth up on {up.base_url} ({args.hosts} hosts), log: {up.log_path}", flush=True)
        facts = prepare(up)
        tempest_dir = workdir / "tempest"
        _stestr_conf(venv_bin, tempest_dir)
        conf_path = tempest_dir / "etc" / "tempest.conf"
        conf.write(conf.render(facts, workdir), conf_path)
        run = _tempest_run(venv_bin, tempest_dir, conf_path, args, workdir / "tempest-run.log")
    minutes = (time.monotonic() - started) / 60
    outcomes_path = workdir / "outcomes.jsonl"
    _outcomes(venv_bin, tempest_dir, outcomes_path)
    outcomes = report.load(outcomes_path)
    tests = report.per_test(outcomes, _listed(venv_bin, tempest_dir, conf_path, args))
    print(report.table(tests))
    heading = _heading(args, run, minutes)
    results.write_text(report.results_text(outcomes, tests, heading) + "\n")
    print(f"results: {results}")
    failed = any(o.status not in ("success", "skip") for o in tests)
    return 1 if failed or not tests else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "regex", nargs="?", default=DEFAULT_REGEX, help="tests to run (tempest run --regex)"
    )
    parser.add_argument("--exclude", help="tests not to run (tempest run --exclude-regex)")
    parser.add_argument("--concurrency", type=int, default=2, help="tempest workers (default 2)")
    parser.add_argument(
        "--hosts", type=int, default=3, help="simulated hosts of berth up (default 3)"
    )
    parser.add_argument(
        "--workdir", type=Path, help="where everything goes (default: a new temporary dir)"
    )
    parser.add_argument(
        "--results", type=Path, help="the results file (default WORKDIR/results.txt)"
    )
    parser.add_argument("--tempest-venv", type=Path, required=True, help="virtualenv with tempest")
    return parser


def _stestr_conf(venv_bin: Path, tempest_dir: Path) -> None:
    """What ``tempest init`` writes for stestr, without registering a named workspace."""
    package = subprocess.run(
        [venv_bin / "python", "-c", "import os, tempest; print(os.path.dirname(tempest.__file__))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    tempest_dir.mkdir(parents=True, exist_ok=True)
    (tempest_dir / ".stestr.conf").write_text(
        f"[DEFAULT]\ntest_path={package}/test_discover\ntop_dir={package}\ngroup_regex=([^\\.]*\\.)*\n"
    )


def _tempest_run(
    venv_bin: Path, tempest_dir: Path, conf_path: Path, args: argparse.Namespace, log_path: Path
) -> list[str]:
    """``tempest run``, its output shown and kept in ``log_path``; returns the command."""
    command = [
        str(venv_bin / "tempest"), "run", "--config-file", str(conf_path),
        "--regex", args.regex, "--concurrency", str(args.concurrency),
    ]  # fmt: skip
    if args.exclude:
        command += ["--exclude-regex", args.exclude]
    print("$", shlex.join(command), flush=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=tempest_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert process.stdout is not None
        try:
            for line in process.stdout:
                sys.stdout.write(line)
                log.write(line)
            process.wait()
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait()
    return command


def _listed(
    venv_bin: Path, tempest_dir: Path, conf_path: Path, args: argparse.Namespace
) -> list[str]:
    """Every test the run selected, including those of classes that never started."""
    command = [str(venv_bin / "tempest"), "run", "--config-file", str(conf_path), "--list-tests",
               "--regex", args.regex]  # fmt: skip
    if args.exclude:
        command += ["--exclude-regex", args.exclude]
    listing = subprocess.run(command, cwd=tempest_dir, capture_output=True, text=True, check=True)
    return [
        line.strip()
        for line in listing.stdout.splitlines()
        if line.startswith(("tempest.", "neutron_"))
    ]


def _outcomes(venv_bin: Path, tempest_dir: Path, out: Path) -> None:
    """The last run's subunit stream, as JSON lines (``outcomes.py``, in the tempest venv)."""
    stream = subprocess.run(
        [venv_bin / "stestr", "last", "--subunit"],
        cwd=tempest_dir,
        capture_output=True,
        check=False,
    ).stdout
    with out.open("wb") as sink:
        subprocess.run(
            [venv_bin / "python", "-m", "tools.tempest.outcomes"],
            input=stream,
            stdout=sink,
            cwd=REPO,
            check=True,
        )


def _heading(args: argparse.Namespace, command: list[str], minutes: float) -> str:
    commit = subprocess.run(
        ["git", "log", "-1", "--format=%h %s"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return "\n".join(
        [
            "# Tempest against berth up",
            "",
            f"- when: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {minutes:.0f} minutes (berth up to the last test)",
            f"- Berth: {commit[:100]}",
            f"- machine: {platform.machine()}, {_cpus()} CPUs, Python {platform.python_version()}",
            f"- berth up --hosts {args.hosts}; {shlex.join(command)}",
        ]
    )


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def _exit(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(143)


if __name__ == "__main__":
    sys.exit(main())
