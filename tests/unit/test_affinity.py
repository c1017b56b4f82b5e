"""``berth up`` runs every thread on one CPU once started (``berth.common.affinity``): the
threads already running, and those started afterwards. Each case runs in a process of its own,
so the test's process keeps every CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux and at least two CPUs",
)

_SCRIPT = """
import json, os, threading
from berth import config
from berth.allinone.stack import on_one_cpu

stop = threading.Event()
before = threading.Thread(target=stop.wait)
before.start()
on_one_cpu(config.Settings(up=config.UpSettings(one_cpu={one_cpu})))
after = threading.Thread(target=stop.wait)
after.start()
seen = {{
    name: sorted(os.sched_getaffinity(thread.native_id))
    for name, thread in (("main", threading.main_thread()), ("before", before), ("after", after))
}}
stop.set()
print(json.dumps(seen))
"""


def _affinities(one_cpu: bool) -> dict[str, list[int]]:
    script = textwrap.dedent(_SCRIPT.format(one_cpu=one_cpu))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_every_thread_runs_on_one_cpu_of_those_allowed() -> None:
    seen = _affinities(one_cpu=True)
    [cpu] = seen["main"]
    assert cpu in os.sched_getaffinity(0)
    assert seen == {"main": [cpu], "before": [cpu], "after": [cpu]}


def test_one_cpu_false_leaves_the_threads_spread() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert _affinities(one_cpu=False) == {"main": allowed, "before": allowed, "after": allowed}
