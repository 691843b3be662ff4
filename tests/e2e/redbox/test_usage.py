"""JobUsage on real Slurm: the CPU time and memory of running jobs, from sstat, in one call.

A job spinning in its batch script (no srun: only ``sstat -a`` sees its batch
step) shows CPU time that rises between two calls; a job running its work
under srun counts both its steps; a held job and an unknown id are absent;
an original red-box answers UNIMPLEMENTED, which the client raises as
Unsupported (the original has no usage to fall back on).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import WAIT, scancel, script, wait_for
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api
from wlmvk.core.errors import Unsupported
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.core.usage import JobUsage
from wlmvk.wlm.client import RedBoxClient

SPIN = "while :; do :; done"


async def usage_until(
    client: RedBoxClient, job_ids: list[JobId], job: JobId, done: Callable[[JobUsage], bool]
) -> dict[JobId, JobUsage]:
    deadline = time.monotonic() + WAIT
    while True:
        usage = dict(await client.usage(job_ids))
        if job in usage and done(usage[job]):
            return usage
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job}: usage {usage.get(job)} after {WAIT} s")
        await asyncio.sleep(1)


async def test_running_jobs_report_rising_cpu_time_and_memory(redbox: RedBox) -> None:
    client = RedBoxClient(redbox.socket)
    held = await client.submit(JobSpec(script=script("#SBATCH --hold", SPIN), partition="debug"))
    spin = await client.submit(JobSpec(script=script("#SBATCH --time=3", SPIN), partition="debug"))
    steps = await client.submit(
        JobSpec(script=script("#SBATCH --time=3", f"srun sh -c '{SPIN}'"), partition="debug")
    )
    try:
        assert (await client.info()).extensions.count("JobUsage") == 1
        await wait_for(client, spin, lambda s: s.status is JobStatus.RUNNING)
        ids = [spin, held, JobId(999_999_1)]
        first = await usage_until(client, ids, spin, lambda u: u.cpu_time >= timedelta(seconds=1))
        assert set(first) == {spin}, "a held job and an unknown id have no running step"
        assert first[spin].steps == 1, "the batch step alone"
        assert first[spin].memory_bytes > 0
        later = await usage_until(client, ids, spin, lambda u: u.cpu_time > first[spin].cpu_time)
        assert later[spin].sampled > first[spin].sampled

        await wait_for(client, steps, lambda s: s.status is JobStatus.RUNNING)
        both = await usage_until(client, [steps], steps, lambda u: u.steps == 2)
        assert both[steps].memory_bytes > 0
    finally:
        scancel(held, spin, steps)
        await client.close()


async def test_an_original_red_box_has_no_usage(redbox_factory) -> None:  # type: ignore[no-untyped-def]
    box: RedBox = redbox_factory(original=True)
    client = RedBoxClient(box.socket)
    channel = Channel(path=box.socket)
    try:
        with pytest.raises(GRPCError) as unimplemented:
            await api.WorkloadManagerStub(channel).job_usage(api.JobUsageRequest(job_ids=[1]))
        assert unimplemented.value.status is Status.UNIMPLEMENTED
        with pytest.raises(Unsupported, match="does not report the usage of running jobs"):
            await client.usage([JobId(1)])
        assert await client.usage([]) == {}
    finally:
        channel.close()
        await client.close()
