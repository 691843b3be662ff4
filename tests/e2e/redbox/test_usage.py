"""JobUsage on real Slurm: the CPU time and memory of running jobs, from sstat, in one call.

A job spinning in its batch script (no srun: only ``sstat -a`` sees its batch
step) shows CPU time that rises between two calls; a job running its work
under srun counts both its steps; a held job and an unknown id are absent;
an original red-box answers UNIMPLEMENTED, which the client raises as
Unsupported (the original has no usage to fall back on).

A job with many running steps whose one step cannot be read (its
slurmstepd stopped, as a node that does not answer) is named unanswered, with
sstat's reason or the budget's, while the other running job is answered.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import WAIT, scancel, script, wait_for
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput, Unsupported
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.core.usage import JobUsage, UsageSample
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm_releases

SPIN = "while :; do :; done"


async def usage_until(
    client: RedBoxClient, job_ids: list[JobId], job: JobId, done: Callable[[JobUsage], bool]
) -> dict[JobId, JobUsage]:
    deadline = time.monotonic() + WAIT
    while True:
        usage = dict((await client.usage(job_ids)).usages)
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
        assert await client.usage([]) == UsageSample({})
    finally:
        channel.close()
        await client.close()


STEPS = 30  # srun steps, with the batch step 31: more than one sstat slice holds (25)


def stepd(step: str) -> int:
    """The pid of the slurmstepd running ``step`` (``<job>.<step>``)."""
    title = f"slurmstepd: [{step}]"
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.rstrip(b"\0").decode(errors="replace") == title:
                return int(entry)
    raise AssertionError(f"no {title} process")


async def running_steps(client: RedBoxClient, job: JobId, count: int) -> None:
    await usage_until(client, [job], job, lambda u: u.steps == count)


async def test_a_step_that_cannot_be_read_loses_only_its_own_job(redbox_factory) -> None:  # type: ignore[no-untyped-def]
    box: RedBox = redbox_factory(user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=120)
    srun = f"for i in $(seq {STEPS}); do srun --overlap -n1 -c1 sleep 600 & done"
    # Submitted first: squeue -s lists steps by job id, so its steps fill the first slices and the
    # spinning job shares a slice with its last steps only, not with step 0.
    many = await client.submit(JobSpec(script=script("#SBATCH --time=5", srun, "wait"), partition="debug"))
    spin = await client.submit(JobSpec(script=script("#SBATCH --time=5", SPIN), partition="debug"))
    held = await client.submit(JobSpec(script=script("#SBATCH --hold", SPIN), partition="debug"))
    try:
        await wait_for(client, spin, lambda s: s.status is JobStatus.RUNNING)
        await wait_for(client, many, lambda s: s.status is JobStatus.RUNNING)
        await running_steps(client, many, STEPS + 1)
        stopped = stepd(f"{many}.0")
        os.kill(stopped, signal.SIGSTOP)
        try:
            # sstat waits for the step (MessageTimeout, 10 s here), names it on stderr and prints
            # the others: the job is unanswered, not reported with part of its steps.
            waited = await client.usage([many, spin, held])
            # A budget shorter than that wait kills the slice holding the step.
            cut = await client.usage([many, spin, held], budget=7)
        finally:
            os.kill(stopped, signal.SIGCONT)
        assert waited.unanswered == {many}
        assert waited.reason == (
            f"sstat: problem getting step_layout for StepId={many}.0: Communication connection failure"
        )
        assert set(waited.usages) == {spin}, "the held job has no running step: absent"
        assert waited.usages[spin].steps == 1
        assert cut.unanswered == {many}
        assert cut.reason == "sstat: no answer within the budget of 7 s (killed)"
        assert set(cut.usages) == {spin}
        with pytest.raises(InvalidInput, match="budget must not be negative, not -1 s"):
            await client.usage([spin], budget=-1)
        after = await client.usage([many, spin, held])
        assert (set(after.usages), after.unanswered) == ({many, spin}, frozenset())
        assert after.usages[many].steps == STEPS + 1
    finally:
        scancel(held, spin, many)
        await client.close()
