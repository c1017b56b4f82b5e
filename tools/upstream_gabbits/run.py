"""Run upstream Placement's functional gabbi files against Berth, in-process, on SQLite (or PostgreSQL, MariaDB).

    .venv/bin/python -m tools.upstream_gabbits.run DIR [-k PATTERN] [-v] [--backend NAME]

DIR is the ``placement/tests/functional/gabbits`` folder of an upstream checkout (see README.md).
Each file gets a fresh database; fixtures are Berth's own (``fixtures.py``). The answers given at
the newest microversion are checked against the replies of Berth's Placement OpenAPI document
too, and those that do not match are counted as mismatches.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import make_service
from tests.dbs import fresh_database
from tests.functional.gabbi_runner import run_story
from tools.upstream_gabbits import fixtures


@dataclass
class FileResult:
    name: str
    run: int = 0
    skipped: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    # Answers at the newest microversion not matching the OpenAPI document's reply.
    mismatches: list[str] = field(default_factory=list)


def run_file(path: Path, backend: str) -> FileResult:
    result = FileResult(path.stem)
    with tempfile.TemporaryDirectory() as tmp:
        db = fresh_database(backend, "upstream", Path(tmp))
        service = make_service(db)
        outcome = run_story(path, service, fixtures, result.mismatches)
        db.dispose()
    result.run = outcome.testsRun
    # Gabbi skips the rest of a file after a failure; those count as not passed.
    result.skipped = len(outcome.skipped)
    for test, trace in outcome.failures + outcome.errors:
        name = test.id().rsplit(".", 2)[-2] if "." in test.id() else test.id()
        result.failures.append((name, _gist(trace)))
    return result


def _gist(trace: str) -> str:
    """The assertion of a gabbi failure, without the traceback frames."""
    lines = [line for line in trace.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith(("AssertionError", "ValueError", "gabbi.exception", "RuntimeError")):
            return "\n".join(lines[i : i + 8])
    return "\n".join(lines[-8:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("-k", dest="pattern", default="", help="only files whose name has this")
    parser.add_argument("-v", dest="verbose", action="store_true", help="print each failure")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgresql", "mysql"],
        default="sqlite",
        help="database; the server ones need BERTH_TEST_POSTGRESQL_URL / BERTH_TEST_MYSQL_URL",
    )
    args = parser.parse_args(argv)
    files = sorted(p for p in args.directory.glob("*.yaml") if args.pattern in p.stem)
    results = [run_file(p, args.backend) for p in files]
    total = sum(r.run for r in results)
    failed = sum(len(r.failures) for r in results)
    skipped = sum(r.skipped for r in results)
    mismatched = sum(len(r.mismatches) for r in results)
    for r in results:
        print(
            f"{r.name:55} {r.run:4} run {len(r.failures):4} failed {r.skipped:4} skipped"
            + (f" {len(r.mismatches):4} mismatches" if r.mismatches else "")
        )
        if args.verbose:
            for name, gist in r.failures:
                print(f"  - {name}\n    " + gist.replace("\n", "\n    "))
            for mismatch in r.mismatches:
                print(f"  - {mismatch}")
    passed = total - failed - skipped
    print(
        f"\n{len(results)} files: {passed} passed, {failed} failed, {skipped} skipped, "
        f"{mismatched} answers not matching the OpenAPI document"
    )
    return 1 if failed or skipped or mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
