"""Where a boot's CPU goes, service by service: ``boot_bench`` with each unit of work timed.

    .venv/bin/python -m bench.boot_breakdown --hosts 1000 --servers 300 --clients 16 --qos

Runs ``bench.boot_bench`` (same arguments) with every RPC method the bus hands to a thread,
every HTTP handler an app runs on its handler threads and every in-process call an app answers in
its caller's thread wrapped, and charges each thread's CPU time (``time.thread_time``) to the
innermost of them running: a conductor's build is charged its own work, not the network
service's handler it calls inline. Prints, for the boots alone (from the first flavor made to the
audit), the CPU seconds, share and count of each, then boot_bench's own figures.

What it does not see: the event loops, the bus's own queues, and the benchmark's clients; the
total it prints against the process's CPU says how much that is. The wrappers cost a few
microseconds a call: compare figures of this tool with each other, not with boot_bench's.
"""

from __future__ import annotations

import collections
import inspect
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench import boot_bench
from berth.bus import dispatch
from berth.common import asgi, inprocess
from berth.compute.db import flavors

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Ledger:
    """Thread CPU per label, each thread's time charged to the innermost label it runs."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._local = threading.local()

    def clear(self) -> None:
        with self._lock:
            self.seconds.clear()
            self.calls.clear()

    @contextmanager
    def charged(self, label: str) -> Iterator[None]:
        stack: list[list[Any]] = self._local.__dict__.setdefault("stack", [])
        now = time.thread_time()
        if stack:
            self._charge(stack[-1], now)
        stack.append([label, now])
        try:
            yield
        finally:
            now = time.thread_time()
            self._charge(stack.pop(), now)
            with self._lock:
                self.calls[label] += 1
            if stack:
                stack[-1][1] = now

    def _charge(self, entry: list[Any], now: float) -> None:
        with self._lock:
            self.seconds[entry[0]] += now - entry[1]

    def print(self) -> None:
        with self._lock:
            total = sum(self.seconds.values())
            print(f"thread CPU charged over the boots: {total:.2f} s")
            for label, seconds in self.seconds.most_common():
                share = 100 * seconds / total if total else 0.0
                print(f"  {seconds:7.2f} s {share:5.1f} % {self.calls[label]:7d}x  {label}")


def _instrument(ledger: Ledger) -> None:
    invoke = dispatch.invoke

    async def invoke_charged(method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        if inspect.iscoroutinefunction(method):
            return await invoke(method, kwargs)
        label = f"rpc {getattr(method, '__qualname__', method)}"

        def charged(**arguments: Any) -> Any:
            with ledger.charged(label):
                return method(**arguments)

        return await invoke(charged, kwargs)

    dispatch.invoke = invoke_charged  # type: ignore[assignment]

    answer = inprocess.InProcessTransport.answer

    def answer_charged(
        self: inprocess.InProcessTransport, scope: dict[str, Any], body: bytes, request: Any = None
    ) -> Any:
        if not self.inline:
            return answer(self, scope, body, request)
        path = _UUID.sub("ID", "/".join(scope.get("path", "").split("/")[:4]))
        with ledger.charged(f"inline {scope.get('method')} {path}"):
            return answer(self, scope, body, request)

    inprocess.InProcessTransport.answer = answer_charged  # type: ignore[method-assign]

    run = asgi.HandlerThreads.run

    async def run_charged(
        self: asgi.HandlerThreads, func: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        label = f"handler {getattr(func, '__qualname__', func)}"

        def charged(*a: Any, **k: Any) -> Any:
            with ledger.charged(label):
                return func(*a, **k)

        return await run(self, charged, *args, **kwargs)

    asgi.HandlerThreads.run = run_charged  # type: ignore[method-assign]

    # The boots begin with the benchmark's flavor and end with its audit.
    create = flavors.create

    def create_then_clear(*args: Any, **kwargs: Any) -> Any:
        ledger.clear()
        return create(*args, **kwargs)

    flavors.create = create_then_clear  # type: ignore[assignment]
    audit = boot_bench.audit

    def print_then_audit(*args: Any, **kwargs: Any) -> Any:
        ledger.print()
        return audit(*args, **kwargs)

    boot_bench.audit = print_then_audit  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    ledger = Ledger()
    _instrument(ledger)
    return boot_bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
