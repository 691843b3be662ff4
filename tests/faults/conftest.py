"""Fixtures of the fault suite."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures.redbox import RedBox
from tests.fixtures.slurm import JOBS_ROOT


@pytest.fixture
def fence() -> Iterator[Path]:
    """A private directory under the Slurm jobs root; red-box's working root goes inside it, so
    anything written outside the root shows up here (the shared jobs root is busy with others)."""
    path = Path(tempfile.mkdtemp(prefix="fence-", dir=JOBS_ROOT))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fenced_redbox(redbox_factory: Callable[..., RedBox], fence: Path) -> RedBox:
    """A red-box (as root) whose working root is ``fence/root``."""
    root = fence / "root"
    root.mkdir()
    return redbox_factory(work_dir=root)
