"""red-box's clock 30 s ahead of slurmctld's, or behind: a finished job still reads COMPLETED.

Only red-box's process is skewed (Debian's libfaketime, ``LD_PRELOAD`` with ``FAKETIME_ONLY_CMDS``
naming its interpreter: sbatch, squeue and slurmrestd keep the host's clock). On the slurmrestd path
status is read by ``GET /jobs?update_time=T``, which slurmctld answers by its own clock: before
CLOCK_MARGIN a red-box 2 s or more ahead sent its own second, and slurmctld said "no change" for
every change within that many seconds of the reading kept. Two keyed jobs: the first sleeps 30 s,
so its end makes red-box read a dump (the first kept reading is from before both started) in
which the second still runs; the second ends 3 s later, which a red-box 30 s ahead was told was
no change, and it read RUNNING until some change came 30 s on (on a quiet cluster: never; with
accounting off its pod then failed as lost). Their states are asked every second: both must read
COMPLETED within 50 s of their submission.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable

import pytest

from tests.faults import slurmside
from tests.fixtures import prerequisites
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SUBMIT_ATTEMPTS = 3

SCRIPTS = [
    "#!/bin/sh\n#SBATCH --output=/dev/null\nsleep 30\n",
    "#!/bin/sh\n#SBATCH --output=/dev/null\nsleep 33\n",
]


def _journal_skew(box: RedBox) -> float:
    """How far red-box's clock is from this host's: its journal's newest ``at`` against now."""
    lines = (box.state_dir / "records.jsonl").read_text().splitlines()
    return float(json.loads(lines[-1])["at"]) - time.time()


async def _submit(client: RedBoxClient, spec: JobSpec) -> JobId:
    """Submitted as the kubelet submits: an Unavailable answer is asked again with the same key,
    which red-box never submits twice. Once, on a new machine, slurmrestd answered HTTP 500,
    error 1007 ("Protocol authentication error") for a minute, munged logging encode retries;
    the cause was not found (docs/development.md, the runs of 2026-12-07). The subject here is
    reading states with a skewed clock, not Slurm's availability."""
    for attempt in range(1, SUBMIT_ATTEMPTS + 1):
        try:
            return await client.submit(spec)
        except Unavailable as exc:
            if attempt == SUBMIT_ATTEMPTS:
                raise
            print(f"{spec.idempotency_key}: attempt {attempt} Unavailable ({exc.message}); asked again")
            await asyncio.sleep(2)
    raise AssertionError("unreachable")


@prerequisites.unless_installed(not slurmside.LIBFAKETIME.exists(), slurmside.faketime_missing())
@pytest.mark.parametrize("skew", [30, -30])
async def test_a_finished_job_reads_completed_with_red_boxs_clock_skewed(
    skew: int, redbox_factory: Callable[..., RedBox]
) -> None:
    box = redbox_factory("--slurm-api", "rest", user=JOB_OWNER, env=slurmside.skewed_clock(skew))
    client = RedBoxClient(box.socket, timeout=60)
    prefix = f"skew{skew}-{os.urandom(3).hex()}"
    try:
        job_ids = [
            await _submit(client, JobSpec(script=script, partition="debug", idempotency_key=f"{prefix}-{n}"))
            for n, script in enumerate(SCRIPTS)
        ]
        assert abs(_journal_skew(box) - skew) < 5, "red-box's clock is the skewed one"
        deadline = time.monotonic() + 50
        while True:
            states = await client.states(job_ids)
            if {s.status for s in states.values()} == {JobStatus.COMPLETED} or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        log = box.log()
        print(
            f"skew {skew:+d} s: dumps read {log.count('states read from the dump')}, "
            f"kept readings {log.count('no job changed: the kept reading')}"
        )
        assert {job: s.status for job, s in states.items()} == dict.fromkeys(job_ids, JobStatus.COMPLETED)
        assert log.count("states read from the dump") > 0, "status was read through slurmrestd"
    finally:
        await client.close()
