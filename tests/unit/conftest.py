"""Fixtures the unit tests share."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture
def socket_path() -> Iterator[str]:
    """A Unix socket's path in a directory of its own under /tmp (short: a socket path has 108 bytes)."""
    home = tempfile.mkdtemp(dir="/tmp")
    yield f"{home}/s.sock"
    shutil.rmtree(home, ignore_errors=True)
