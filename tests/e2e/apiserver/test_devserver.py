"""``wlmvk dev apiserver`` serves until stopped and writes a kubeconfig kubectl uses unchanged."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.apiserver import KUBECTL, dev_apiserver

pytestmark = pytest.mark.kubectl


async def test_dev_apiserver_command() -> None:
    async with dev_apiserver() as env:
        kubectl = await asyncio.create_subprocess_exec(
            KUBECTL, "get", "namespaces", "-o", "name", env=env, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await kubectl.communicate()
        assert b"namespace/kube-node-lease" in out
