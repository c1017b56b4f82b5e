"""Fuzz every API of a running ``berth up --auth noauth2`` from outside, as a new user's fuzzer
would, and count what comes back: requests sent, answers by status class, 5xx the documents do
not declare, successes that do not match their documented schema, requests left unanswered.

    berth up --auth noauth2 --port 8000 &
    python -m tools.fuzz_apis --url http://127.0.0.1:8000 --examples 40 --seed 7

Every operation of the four OpenAPI documents gets ``--examples`` generated requests (valid and
invalid bodies, queries and path parameters) on real resources made first (``tools.fuzzing``);
a failure does not stop the run. The exit status is 1 when any 5xx, mismatch or unanswered
request was seen, and the first of each per operation is printed as a curl command.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import response_schema_conformance

from tools.fuzzing import ADMIN, HEADERS, operations, real_ids, resources


@dataclass
class Tally:
    requests: int = 0
    by_class: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    mismatches: int = 0
    unanswered: int = 0
    # (operation, kind) to a curl command reproducing its first case.
    first: dict[tuple[str, str], str] = field(default_factory=dict)

    def note(self, operation: str, kind: str, case: schemathesis.Case, detail: str) -> None:
        self.first.setdefault((operation, kind), f"{case.as_curl_command()}\n    {detail[:300]}")

    @property
    def failed(self) -> bool:
        return bool(self.server_errors or self.mismatches or self.unanswered)


def fuzz_operation(
    tally: Tally, url: str, api: str, operation: Any, made: dict[str, str], examples: int, seed: int
) -> None:
    label = f"{api} {operation.label}"
    documented = operation.definition.raw["responses"]

    @fixed_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=st.one_of(
            operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
            operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        )
    )
    def run(case: schemathesis.Case) -> None:
        real_ids(case, made)
        tally.requests += 1
        try:
            response = case.call(base_url=f"{url}/{api}", headers=HEADERS[api], timeout=60)
        except Exception as exc:  # a request without an answer is what is counted here
            tally.unanswered += 1
            tally.note(label, "unanswered", case, repr(exc))
            return
        status = response.status_code
        tally.by_class[f"{status // 100}xx"] += 1
        if status >= 500 and str(status) not in documented:
            tally.server_errors += 1
            tally.note(label, f"{status}", case, response.text)
            return
        try:
            case.validate_response(response, checks=[response_schema_conformance])
        except Exception as exc:  # schemathesis raises its failures grouped
            tally.mismatches += 1
            tally.note(label, "mismatch", case, str(exc))

    run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="berth up's base URL (noauth2)")
    parser.add_argument("--examples", type=int, default=40, help="requests per operation")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    url = args.url.rstrip("/")
    started = time.monotonic()
    with httpx.Client(base_url=url, headers=ADMIN, timeout=60) as client:
        made = resources(client)
    tally = Tally()
    for api, operation in operations():
        fuzz_operation(tally, url, api, operation, made, args.examples, args.seed)
    for (operation, kind), example in sorted(tally.first.items()):
        print(f"{kind}: {operation}\n    {example}\n")
    classes = ", ".join(f"{name}: {count}" for name, count in sorted(tally.by_class.items()))
    print(
        f"{tally.requests} requests in {time.monotonic() - started:.0f} s ({classes}); "
        f"undeclared 5xx: {tally.server_errors}, answers not matching their schema: "
        f"{tally.mismatches}, unanswered: {tally.unanswered}"
    )
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
