"""Logging at DEBUG shows wlmvk's lines, not every HTTP/2 frame of its libraries."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from wlmvk.core import logging as core_logging


@pytest.fixture
def restored() -> Iterator[None]:
    root = logging.getLogger()
    saved = {name: logging.getLogger(name).level for name in core_logging.QUIET}
    level = root.level
    config = structlog.get_config()
    yield
    structlog.configure(**config)
    for name, value in saved.items():
        logging.getLogger(name).setLevel(value)
    root.setLevel(level)


def test_debug_keeps_the_libraries_frames_out(restored: None) -> None:
    core_logging.configure("debug", json=True)
    for name in ("hpack", "h2", "grpclib", "asyncio", "aiohttp.access", "hpack.hpack", "h2.connection"):
        assert not logging.getLogger(name).isEnabledFor(logging.DEBUG), name
        assert logging.getLogger(name).isEnabledFor(logging.WARNING), name
