"""A subunit v2 stream (``stestr last --subunit``) on stdin as JSON lines on stdout.

Runs with the tempest virtualenv's Python, which has python-subunit and testtools; Berth's own
venv has neither. One line per test: ``{"id": ..., "status": "success" | "fail" | "skip" | ...,
"detail": the traceback of a failure or the reason of a skip}``.

    TEMPEST_VENV/bin/python -m tools.tempest.outcomes < run.subunit > outcomes.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

import subunit  # type: ignore[import-not-found]
import testtools  # type: ignore[import-not-found]


def main() -> int:
    def emit(test: dict[str, Any]) -> None:
        details = test["details"]
        detail = ""
        for key in ("traceback", "reason"):
            if key in details:
                detail = details[key].as_text()
                break
        record = {"id": test["id"], "status": test["status"], "detail": detail}
        sys.stdout.write(json.dumps(record) + "\n")

    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout")
    result = testtools.StreamToDict(emit)
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()
    return 0


if __name__ == "__main__":
    sys.exit(main())
