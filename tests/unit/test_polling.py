"""The tests' one waiting helper (tests/fixtures/polling.py)."""

from __future__ import annotations

import pytest

from tests.fixtures.polling import eventually
from wlmvk.core.errors import Unavailable


async def test_returns_the_first_truthy_value_of_a_sync_or_async_check() -> None:
    values = iter([0, None, "", "ready"])
    assert await eventually(lambda: next(values), every=0) == "ready"

    async def later() -> int:
        return 7

    assert await eventually(later, every=0) == 7


async def test_not_yet_exceptions_are_retried() -> None:
    calls = iter([KeyError("k"), Unavailable("down"), AssertionError("no"), "ok"])

    def check() -> str:
        value = next(calls)
        if isinstance(value, BaseException):
            raise value
        return value

    assert await eventually(check, every=0) == "ok"


async def test_a_timeout_names_what_and_the_last_thing_seen() -> None:
    pods: list[str] = []  # never listed
    with pytest.raises(AssertionError, match=r"not true within 0.05 s: the pod listed \(last: \[\]\)"):
        await eventually(lambda: pods, timeout=0.05, every=0.01, what="the pod listed")


async def test_a_timeout_chains_the_last_exception() -> None:
    def check() -> bool:
        raise Unavailable("connection refused")

    with pytest.raises(AssertionError) as caught:
        await eventually(check, timeout=0.02, every=0.01)
    assert isinstance(caught.value.__cause__, Unavailable)


async def test_other_exceptions_propagate_at_once() -> None:
    def check() -> bool:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        await eventually(check, timeout=60)
