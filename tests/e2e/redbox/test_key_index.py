"""The key index read when red-box starts, through a real red-box and the real Slurm.

red-box reads its user's keyed jobs (``squeue``, ``sacct``) once at start, so the first keyed
submissions find the index fresh instead of each red-box reading it then: with many tenants'
red-boxes, their first pods all come in one burst. The Slurm commands red-box runs are counted
by shims ahead of the real ones on its PATH.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.redbox.helpers import scancel, script, slurm_cmd
from tests.fixtures.redbox import RedBox
from wlmvk.core.jobs import JobSpec
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]

HELD = script("#SBATCH --hold", "true")
COUNTED = ("squeue", "sacct")


def counting_path(directory: Path) -> tuple[str, Path]:
    """A PATH whose ``squeue`` and ``sacct`` note their name in a file, then run the real one."""
    shims, ran = directory / "shims", directory / "ran"
    shims.mkdir()
    ran.touch()
    ran.chmod(0o666)
    for name in COUNTED:
        real = shutil.which(name)
        assert real is not None
        shim = shims / name
        shim.write_text(f'#!/bin/sh\necho {name} >> {ran}\nexec {real} "$@"\n')
        shim.chmod(0o755)
    return f"{shims}:{os.environ['PATH']}", ran


async def test_keys_are_read_at_start_and_not_again_by_the_first_submission(
    redbox_factory: Callable[..., RedBox], tmp_path: Path
) -> None:
    path, ran = counting_path(tmp_path)
    box = redbox_factory(env={"PATH": path})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while "sacct" not in ran.read_text() and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert ran.read_text().split() == ["squeue", "sacct"]  # the read at start, before any call
    client = RedBoxClient(box.socket, timeout=30)
    key = str(uuid.uuid4())
    try:
        job_id = await client.submit(JobSpec(script=HELD, partition="debug", idempotency_key=key))
    finally:
        await client.close()
    try:
        assert slurm_cmd("squeue", "-h", "-j", str(job_id), "-o", "%k").strip() == f"wlmvk:{key}"
        # The submission trusted the index read at start: no read of its own.
        assert ran.read_text().split() == ["squeue", "sacct"]
    finally:
        scancel(job_id)
