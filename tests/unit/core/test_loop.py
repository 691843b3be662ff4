"""core.loop: every process's event loop, uvloop's unless WLMVK_EVENT_LOOP=asyncio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import uvloop

from wlmvk.core import loop
from wlmvk.core.errors import InvalidInput


async def _running_loop() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_the_default_is_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.run(_running_loop()) is uvloop.Loop


@pytest.mark.parametrize("value", ["uvloop", " UVLOOP ", ""])
def test_uvloop_by_name_or_empty(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(loop.ENV, value)
    assert loop.run(_running_loop()) is uvloop.Loop


def test_asyncio_turns_uvloop_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "asyncio")
    ran = loop.run(_running_loop())
    assert ran is not uvloop.Loop
    assert ran.__module__.startswith("asyncio")


def test_without_uvloop_installed_asyncio_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # an import of it raises ImportError
    monkeypatch.delenv(loop.ENV, raising=False)
    assert loop.run(_running_loop()).__module__.startswith("asyncio")


def test_an_unknown_loop_is_refused_and_nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "tokio")
    ran: list[bool] = []

    async def main() -> None:
        ran.append(True)

    with pytest.raises(InvalidInput, match=r"WLMVK_EVENT_LOOP='tokio': expected one of uvloop, asyncio"):
        loop.run(main())
    assert ran == []


def test_red_box_says_so_and_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, loop.ENV: "tokio"}
    argv = [sys.executable, "-m", "wlmvk.redbox", "--socket", f"{tmp_path}/rb.sock"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (
        2,
        "red-box: WLMVK_EVENT_LOOP='tokio': expected one of uvloop, asyncio\n",
    )
