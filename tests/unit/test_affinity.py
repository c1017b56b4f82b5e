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

from berth.common.affinity import more_room

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


def test_a_cpu_with_more_room_by_more_than_the_margin_is_moved_to() -> None:
    assert more_room(0, {0: 150, 1: 10}, margin=40) == 1
    assert more_room(0, {0: 45, 1: 10}, margin=40) is None  # not by more than the margin
    assert more_room(1, {0: 0, 1: 0, 2: 0}, margin=40) is None
    assert more_room(2, {0: 90, 1: 30, 2: 200}, margin=40) == 1


_HOGGED = """
import itertools, json, os, time
from berth.common import affinity

affinity._LOOK_SECONDS = 0.2
one = affinity.OneCpu()
first = one.pin()
# From now on other work keeps that CPU busy, and leaves the others idle.
looks = itertools.count(1)
affinity._busy = lambda: {cpu: next(looks) * 1000 if cpu == first else 0 for cpu in one._allowed}
one.follow()
deadline = time.monotonic() + 20
while one.cpu == first and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"first": first, "now": one.cpu, "main": sorted(os.sched_getaffinity(0))}))
"""


def test_a_process_leaves_a_cpu_other_work_keeps_busy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HOGGED], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["now"] != seen["first"]
    assert seen["main"] == [seen["now"]]


_REFUSED = """
import json, os
from berth.common import affinity

def refuse(tid, cpus):
    raise PermissionError(1, "Operation not permitted")

set_affinity, os.sched_setaffinity = os.sched_setaffinity, refuse
one = affinity.OneCpu()
cpu = one.pin()
os.sched_setaffinity = set_affinity
print(json.dumps({"cpu": cpu, "main": sorted(os.sched_getaffinity(0))}))
"""


def test_a_system_that_refuses_to_pin_leaves_the_process_spread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _REFUSED], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"cpu": None, "main": sorted(os.sched_getaffinity(0))}
    assert "cannot keep this process's threads on one CPU" in done.stderr
