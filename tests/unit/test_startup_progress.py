"""Start-up progress: without a terminal, log lines of how far a step got and its rate."""

from __future__ import annotations

import logging

import pytest

from berth.allinone import progress
from berth.allinone.progress import StepProgress, timed


def test_a_step_logs_its_progress_and_ends_with_its_rate(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.0)
    with (
        caplog.at_level(logging.INFO, logger=progress.__name__),
        StepProgress("hosts registered", 3, terminal=False) as step,
    ):
        for _ in range(3):
            step.advance()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("hosts registered: 1 of 3 (")
    assert lines[-1].startswith("hosts registered: 3 in ") and lines[-1].endswith("/s)")


def test_a_failed_step_claims_no_rate_and_a_timed_block_says_how_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=progress.__name__):
        with pytest.raises(RuntimeError), StepProgress("hosts", 2, terminal=False):
            raise RuntimeError("Placement went away")
        with timed("network agents reported"):
            pass
    assert [r.getMessage()[:27] for r in caplog.records] == ["network agents reported in "]
