"""How far a long start-up step has got: a bar on a terminal, a log line every few seconds
otherwise, and one line at the end with the rate."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

LOG = logging.getLogger(__name__)
LOG_EVERY_SECONDS = 5.0


class StepProgress:
    """``with StepProgress("hosts registered", total) as step: ... step.advance()``; safe to
    advance from several threads."""

    def __init__(self, what: str, total: int, terminal: bool | None = None) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self._terminal = sys.stderr.isatty() if terminal is None else terminal
        self._lock = threading.Lock()
        self._started = 0.0
        self._logged = 0.0
        self._bar: Progress | None = None

    def __enter__(self) -> StepProgress:
        self._started = self._logged = time.monotonic()
        if self._terminal and self.total > 1:
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), transient=True,
            )  # fmt: skip
            self._bar.start()
            self._bar.add_task(self.what, total=self.total, rate="-")
        return self

    def advance(self, count: int = 1) -> None:
        with self._lock:
            self.done += count
            now = time.monotonic()
            rate = self.done / max(now - self._started, 1e-9)
            if self._bar is not None:
                self._bar.update(self._bar.task_ids[0], completed=self.done, rate=f"{rate:.0f}")
            elif now - self._logged >= LOG_EVERY_SECONDS:
                self._logged = now
                LOG.info("%s: %d of %d (%.0f/s)", self.what, self.done, self.total, rate)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        _error: BaseException | None,
        _trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        if kind is None:
            seconds = time.monotonic() - self._started
            LOG.info(
                "%s: %d in %.1f s (%.0f/s)",
                self.what, self.done, seconds, self.done / max(seconds, 1e-9),
            )  # fmt: skip


@contextmanager
def timed(what: str) -> Iterator[None]:
    """Log at INFO how long the block took (not when it failed)."""
    started = time.monotonic()
    yield
    LOG.info("%s in %.1f s", what, time.monotonic() - started)
