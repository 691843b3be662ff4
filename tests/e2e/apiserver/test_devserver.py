"""``wlmvk dev apiserver`` serves until stopped and writes a kubeconfig kubectl uses unchanged."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

from tests.fixtures.apiserver import KUBECTL

pytestmark = pytest.mark.kubectl


async def test_dev_apiserver_command() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="apis-dev-", dir="/tmp"))
    kubeconfig = workdir / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from wlmvk.cli import run; run()",
        "dev",
        "apiserver",
        "--port",
        "0",
        "--kubeconfig",
        str(kubeconfig),
        "--log-level",
        "warning",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        banner = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert banner.startswith(b"wlmvk apiserver: http://127.0.0.1:")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(workdir)}
        kubectl = await asyncio.create_subprocess_exec(
            KUBECTL, "get", "namespaces", "-o", "name", env=env, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await kubectl.communicate()
        assert b"namespace/kube-node-lease" in out
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        shutil.rmtree(workdir, ignore_errors=True)
