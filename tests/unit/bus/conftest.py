"""Bus tests are coroutines: each runs in a fresh event loop of its own (no plugin needed)."""

from __future__ import annotations

import asyncio
import inspect

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test):
        return None
    wanted = inspect.signature(test).parameters
    asyncio.run(test(**{name: pyfuncitem.funcargs[name] for name in wanted}))
    return True
