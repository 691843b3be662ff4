"""Shared by the controller end-to-end tests: scratch directories, and the root the host kubelet needs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.apiserver import KUBECTL
from tests.fixtures.shared_dirs import SharedDir

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="the host kubelet switches users and mounts: it needs root"
)

Scratch = Callable[[int], Path]


@pytest.fixture
def scratch(shared_dir: SharedDir) -> Scratch:
    """``scratch(mode)``: a fresh directory under /tmp with that mode, removed after the test."""
    return lambda mode: shared_dir("hk-", mode, "/tmp")


def gated_script(gate: Path) -> str:
    """A container's script: print ``first``, wait for ``gate/go`` to exist, print ``second``."""
    return f"echo first; while [ ! -e {gate}/go ]; do sleep 0.05; done; echo second"


async def assert_logs_follow(apiserver: Any, pod: str, gate: Path) -> None:
    """``kubectl logs -f`` of a running :func:`gated_script` pod streams each line and ends with it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(apiserver.kubeconfig), HOME=str(apiserver.home))
    follower = await asyncio.create_subprocess_exec(
        KUBECTL, "logs", "-f", pod, stdout=asyncio.subprocess.PIPE, env=env
    )
    assert follower.stdout is not None
    assert await asyncio.wait_for(follower.stdout.readline(), 30) == b"first\n"
    (gate / "go").write_text("")
    assert await asyncio.wait_for(follower.stdout.readline(), 30) == b"second\n"
    assert await asyncio.wait_for(follower.wait(), 30) == 0, "the stream ends when the container exits"


async def pid_written(path: Path, timeout: float = 10) -> int:
    """The process id a container wrote to ``path``, once it is there."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (text := _read(path)):
        assert loop.time() < deadline, f"no pid in {path}"
        await asyncio.sleep(0.05)
    return int(text)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""
