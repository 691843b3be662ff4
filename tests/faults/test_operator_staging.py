"""The operator stopped mid-staging by cancelling its task in the test's event loop: while the
inputs go up, and again while the results come down.
Cancelling still runs the operator's cleanup, which hands the Lease over at once; the abrupt case,
an operator process killed with SIGKILL whose Lease must expire, is test_operator_kill9.py. A new
operator takes over; the SlurmJob still ends Succeeded (nothing in it can fail), the inputs are in
red-box's working root once, and the results are in the volume once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack, build
from tests.e2e.operator.support import status_of, wait_status
from tests.faults.staged import create_staged, staging_dirs
from tests.fixtures import polling

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST]


@pytest.fixture
async def stack(apiserver: Any, redbox: Any, kubelet_factory: Any) -> AsyncIterator[Stack]:
    built = await build(apiserver, redbox, kubelet_factory)
    yield built
    await _kill(built)


async def _kill(stack: Stack) -> None:
    """Cancel the operator's task (its cleanup still runs: the Lease is released)."""
    task = stack._operator
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    stack._operator = None


async def _kill_during(stack: Stack, name: str, phase: str, identity: str) -> str:
    """Once the SlurmJob shows ``phase``, or a phase after it, return that phase; in ``phase``,
    the operator is first stopped and another one (``identity``) started."""
    later = {"Succeeded", "Failed"} | ({"Running", "Collecting"} if phase == "Preparing" else set())

    async def reached() -> str | None:
        status = (await status_of(stack.apiserver, name, "slurmjob")).get("status")
        return str(status) if status in {phase, *later} else None

    reached.__name__ = f"{name} in {phase} or later"
    seen: str = await polling.eventually(reached, timeout=180, every=0.05)
    if seen == phase:
        await _kill(stack)
        await stack.start_operator(identity)
    return seen


def _volume(name: str, path: Path) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": str(path), "type": "Directory"}}


def _tree(root: Path) -> list[str]:
    return sorted(str(Path(d, f).relative_to(root)) for d, _, files in os.walk(root) for f in files)


async def test_operator_killed_mid_staging_completes_once(stack: Stack) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="opkill-", dir="/tmp"))
    # b.txt is an upload that takes a moment.
    files = {"a.txt": b"a\n", "sub/b.txt": os.urandom(3 * 1024 * 1024)}
    inputs, outputs = staging_dirs(scratch, files)
    name = f"opkill-{os.urandom(2).hex()}"
    batch = (
        "#!/bin/sh\n#SBATCH --cpus-per-task=1\nmkdir -p out\n"
        "(cd in && find . -type f | sort) >out/listing.txt\n"
    )
    await create_staged(stack, name, batch, inputs, outputs)
    # Each stage takes a staging pod's whole life (created, placed, run, uploading 3 MiB or
    # downloading): the operator is caught in both.
    assert await _kill_during(stack, name, "Preparing", "op-2") == "Preparing"
    assert await _kill_during(stack, name, "Collecting", "op-3") == "Collecting"
    final = await wait_status(stack.apiserver, name, {"Succeeded", "Failed"}, timeout=180)
    # Nothing in the job can fail: a kill of the operator must not fail it either.
    assert (final["status"], final["reason"]) == ("Succeeded", "Completed"), final
    assert _tree(outputs) == ["out/listing.txt"]
    assert (outputs / "out" / "listing.txt").read_text().split() == ["./data/a.txt", "./data/sub/b.txt"]
    uploaded = [p for p in stack.redbox.work_dir.rglob("b.txt")]
    assert len(uploaded) == 1, uploaded
    assert uploaded[0].read_bytes() == (inputs / "sub" / "b.txt").read_bytes()
