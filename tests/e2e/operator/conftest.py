"""The ``stack`` fixture of the operator's end-to-end tests: API server, red-box (as the job owner,
UID 1000, as deployed), kubelet and operator; on the real control plane, the agent node too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.e2e.operator.stack import Stack, build
from tests.fixtures.redbox import JOB_OWNER, RedBox


@pytest.fixture
def redbox_args() -> tuple[str, ...]:
    """red-box's extra flags in ``stack``: a test module overrides this fixture to give some."""
    return ()


@pytest.fixture
async def stack(
    apiserver: Any,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: Any,
    request: pytest.FixtureRequest,
    redbox_args: tuple[str, ...],
) -> AsyncIterator[Stack]:
    if apiserver.plane == "real":
        # Staging pods need the agent host as an ordinary node; the in-memory server has its own.
        request.getfixturevalue("real_agent_node")
    built = await build(apiserver, redbox_factory(*redbox_args, user=JOB_OWNER), kubelet_factory)
    yield built
    await built.stop_operator()
