"""red-box killed with SIGKILL while a SlurmJob's data moves: mid-StageIn, then mid-StageOut.

red-box runs as the job owner (UID 1000) and is started again at once, as its supervisor
would. ``wlmvk stage`` in the prepare and collect pods starts an interrupted transfer again
(it says so on stderr, which is the pod's log) and both directions overwrite what the broken
attempt left, so the exact outcome is: the SlurmJob Succeeded with reason Completed, the
inputs in the job's directory and the results in the volume byte for byte, one Slurm job,
and each staging pod run once. (A download that never finishes says, in the pod's
termination message and so the SlurmJob's CollectFailed message, that its copy is
incomplete: tests/unit/staging/test_app.py.)
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack, build
from tests.e2e.operator.support import wait_status
from tests.faults.staged import create_staged, staging_dirs
from tests.fixtures.redbox import JOB_OWNER, RedBox

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST]

SIZE = 96 * 1024 * 1024
RETRIED = "; starting the transfer again in 1 s"


@pytest.fixture
async def stack(
    apiserver: Any, redbox_factory: Callable[..., RedBox], kubelet_factory: Any
) -> AsyncIterator[Stack]:
    built = await build(apiserver, redbox_factory(user=JOB_OWNER), kubelet_factory)
    yield built
    await built.stop_operator()


async def _kill_mid_transfer(box: RedBox, partial: Callable[[], Path | None], what: str) -> None:
    """kill -9 red-box once ``partial()`` finds the file being written, then start it again."""
    for _ in range(60_000):
        found = partial()
        if found is not None:
            size = found.stat().st_size
            if 0 < size < SIZE:
                await asyncio.to_thread(box.kill)
                await asyncio.to_thread(box.start)
                return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never caught mid-{what}")


def _growing(root: Path) -> Callable[[], Path | None]:
    def find() -> Path | None:
        for path in root.rglob("big.bin"):
            return path
        return None

    return find


async def _pod_log(stack: Stack, name: str) -> str:
    done = await stack.kubectl("logs", name)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_red_box_killed_mid_stage_in_and_mid_stage_out(stack: Stack) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="rbkill-", dir="/tmp"))
    try:
        await _staged_job(stack, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _staged_job(stack: Stack, scratch: Path) -> None:
    payload = os.urandom(SIZE)
    inputs, outputs = staging_dirs(scratch, {"big.bin": payload})
    name = f"rbkill-{os.urandom(2).hex()}"
    batch = "#!/bin/sh\n#SBATCH --cpus-per-task=1\nmkdir -p out\ncp in/data/big.bin out/big.bin\n"
    await create_staged(stack, name, batch, inputs, outputs)
    box: RedBox = stack.redbox
    await _kill_mid_transfer(box, _growing(box.work_dir), "StageIn")
    await _kill_mid_transfer(box, _growing(outputs), "StageOut")
    final = await wait_status(stack.apiserver, name, {"Succeeded", "Failed"}, timeout=300)
    assert (final["status"], final["reason"]) == ("Succeeded", "Completed"), final
    assert sorted(p.relative_to(outputs).as_posix() for p in outputs.rglob("*")) == ["out", "out/big.bin"]
    assert (outputs / "out" / "big.bin").read_bytes() == payload
    uploaded = list(box.work_dir.rglob("in/data/big.bin"))
    assert len(uploaded) == 1, uploaded
    assert uploaded[0].read_bytes() == payload
    assert len(box.journal_job_ids()) == 1
    for pod in (f"{name}-job-prepare", f"{name}-job-collect"):
        log = await _pod_log(stack, pod)
        assert sum(RETRIED in line for line in log.splitlines()) == 1, log
        phase = await stack.kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}")
        assert phase.stdout == "Succeeded"
