"""The verdicts a Keystone authenticator keeps: never longer than auth_token would, never past
a token's expiry, and never a refusal."""

from __future__ import annotations

import datetime as dt

import pytest

from berth.common.context import RequestContext
from berth.identity.tokens import Verdicts

TOKENS = (("x-auth-token", "gAAAA-user"),)
ALICE = RequestContext(user_id="alice", project_id="p1", roles=("member",), request_id="req-1")


def _in(seconds: float) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


def test_a_verdict_is_kept_for_the_cache_time_when_the_token_lives_longer() -> None:
    verdicts = Verdicts(300)
    verdicts.keep(TOKENS, ALICE, [_in(3600)])
    assert verdicts.get(TOKENS) == ALICE
    assert verdicts.get((("x-auth-token", "another"),)) is None


def test_a_verdict_ends_with_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = Verdicts(300)
    clock = [1000.0]
    monkeypatch.setattr("berth.identity.tokens.time.monotonic", lambda: clock[0])
    verdicts.keep(TOKENS, ALICE, [_in(3600), _in(10)])  # the service token expires first
    clock[0] += 9
    assert verdicts.get(TOKENS) == ALICE
    clock[0] += 2
    assert verdicts.get(TOKENS) is None


def test_the_cache_time_bounds_a_long_lived_token(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = Verdicts(60)
    clock = [0.0]
    monkeypatch.setattr("berth.identity.tokens.time.monotonic", lambda: clock[0])
    verdicts.keep(TOKENS, ALICE, [_in(3600)])
    clock[0] = 61
    assert verdicts.get(TOKENS) is None


@pytest.mark.parametrize(
    ("seconds", "expiries"),
    [(0, [_in(3600)]), (300, [None]), (300, [_in(-5)]), (300, [_in(3600), None])],
    ids=["cache off", "expiry unknown", "expired", "service token expiry unknown"],
)
def test_nothing_is_kept_when_it_cannot_be_kept_safely(
    seconds: float, expiries: list[dt.datetime | None]
) -> None:
    verdicts = Verdicts(seconds)
    verdicts.keep(TOKENS, ALICE, expiries)
    assert verdicts.get(TOKENS) is None
