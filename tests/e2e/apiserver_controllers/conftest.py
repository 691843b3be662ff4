"""Shared by the controller end-to-end tests: scratch directories, and the root the host kubelet needs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="the host kubelet switches users and mounts: it needs root"
)

Scratch = Callable[[int], Path]


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    """``scratch(mode)``: a fresh directory under /tmp with that mode, removed after the test."""
    made: list[Path] = []

    def make(mode: int) -> Path:
        path = Path(tempfile.mkdtemp(prefix="hk-", dir="/tmp"))
        path.chmod(mode)
        made.append(path)
        return path

    yield make
    for path in made:
        shutil.rmtree(path, ignore_errors=True)
