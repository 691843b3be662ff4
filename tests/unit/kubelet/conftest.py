"""Fixtures of the kubelet's unit tests: the exec transports' stub server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.kubelet import execstub


@pytest.fixture
async def exec_server() -> AsyncIterator[execstub.ExecServer]:
    """``server.kubelet_app`` on a free port with ``execstub.Stub`` as its exec handler."""
    async with execstub.exec_server() as running:
        yield running
