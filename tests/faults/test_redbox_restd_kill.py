"""slurmrestd killed (SIGKILL) while red-box submits through it: no job lost, none doubled.

red-box runs as the job owner with ``--slurm-api rest``. 160 keyed submissions
go in, 8 at a time, and red-box's slurmrestd is killed twice while they run.
A request it had taken may or may not have made its job: red-box looks the key
up in squeue before sbatch submits it. Every call answers, with a distinct job
id; Slurm holds exactly one job per key; asking again with every key makes
nothing new. slurmrestd was started again after each kill and submissions went
back to it. Cancels go through it too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults import slurmside
from tests.fixtures.processes import children
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.slurm_releases]

JOBS = 160
IN_FLIGHT = 8
KILL_AT = (30, 90)
SCRIPT = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --output=/dev/null\ntrue\n"


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _keys_in_slurm(prefix: str) -> Counter[str]:
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-u", JOB_OWNER, "-o", "%k"], capture_output=True, text=True, check=True
    ).stdout
    return Counter(
        w.removeprefix("wlmvk:") for line in out.splitlines() for w in line.split()[:1] if prefix in w
    )


async def _killer(done: list[JobId], box: RedBox, killed: list[int]) -> None:
    for threshold in KILL_AT:
        while len(done) < threshold:
            await asyncio.sleep(0.01)
        pid = slurmside.slurmrestd_pid(box)
        while pid is None:  # restarted after the last kill, not serving yet
            await asyncio.sleep(0.05)
            pid = slurmside.slurmrestd_pid(box)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)


async def test_killing_slurmrestd_mid_run_loses_and_doubles_nothing(
    redbox_factory: Callable[..., RedBox],
) -> None:
    box = redbox_factory("--slurm-api", "rest", user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=120)
    prefix = f"restkill-{os.urandom(3).hex()}"
    keys = [f"{prefix}-{n}" for n in range(JOBS)]
    done: list[JobId] = []
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def submit(key: str) -> JobId:
        async with gate:
            job_id = await client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=key))
        done.append(job_id)
        return job_id

    killed: list[int] = []
    try:
        ids = await asyncio.gather(_killer(done, box, killed), *(submit(k) for k in keys))
        job_ids = ids[1:]
        assert len(killed) == len(KILL_AT)
        assert len(set(job_ids)) == JOBS, "one job per key"
        in_slurm = _keys_in_slurm(prefix)
        assert set(in_slurm) == set(keys)
        assert set(in_slurm.values()) == {1}, "no key has two jobs"

        again = [
            await client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=k)) for k in keys
        ]
        assert again == job_ids
        assert sum(_keys_in_slurm(prefix).values()) == JOBS

        while box.log().count('"slurmrestd serving"') < 1 + len(KILL_AT):
            await asyncio.sleep(0.05)  # started again after the last kill
        sbatch_used = box.log().count("submitting through sbatch")
        recovered = box.log().count("job found by key after an uncertain answer")
        print(f"killed {killed}; through sbatch {sbatch_used}; found by key after a kill {recovered}")
        more = [f"{prefix}-more-{n}" for n in range(10)]
        for key in more:
            await client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=key))
        assert box.log().count("submitting through sbatch") == sbatch_used, "back on slurmrestd"
        assert sum(_keys_in_slurm(prefix).values()) == JOBS + len(more)

        # Cancels go through the restarted slurmrestd.
        for job_id in job_ids[:10]:
            await client.cancel(job_id)
        states = await client.states(job_ids[:10])
        assert {s.status.name for s in states.values()} == {"CANCELLED"}
    finally:
        await client.close()
        assert box.proc is not None
        assert children(box.proc.pid), "red-box still runs"


async def test_a_hung_slurmrestd_is_replaced_and_its_jobs_found_by_key(
    redbox_factory: Callable[..., RedBox],
) -> None:
    """SIGSTOP: the requests it holds get no answer within --slurm-timeout. red-box kills it (so it
    cannot act on them later) and looks each one's key up before sbatch may submit it."""
    box = redbox_factory("--slurm-api", "rest", "--slurm-timeout", "5", user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=120)
    prefix = f"resthang-{os.urandom(3).hex()}"
    keys = [f"{prefix}-{n}" for n in range(40)]
    try:
        first = [
            await client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=k))
            for k in keys[:5]
        ]
        hung = slurmside.slurmrestd_pid(box)
        assert hung is not None
        os.kill(hung, signal.SIGSTOP)
        rest = await asyncio.gather(
            *(client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=k)) for k in keys[5:])
        )
        job_ids = first + list(rest)
        assert len(set(job_ids)) == len(keys)
        in_slurm = _keys_in_slurm(prefix)
        assert set(in_slurm) == set(keys)
        assert set(in_slurm.values()) == {1}, "no key has two jobs"
        assert not _alive(hung), "the hung slurmrestd was killed"
        log = box.log()
        looked_up = log.count("no job under the key after the bound")
        looked_up += log.count("job found by key after an uncertain answer")
        print(f"no answer, then looked up by key: {looked_up}; through sbatch {log.count('through sbatch')}")
        assert looked_up >= 1
    finally:
        await client.close()


STATUS_BOUND = 6.0
"""Seconds a JobStates call may take while slurmrestd is stopped: the liveness look (every 2 s)
replaces it, its GET is then Lost at once and squeue answers."""
SUBMIT_BOUND = 25.0
"""Seconds a SubmitJob may take meanwhile: the look, then the key looked up after the bound
(MessageTimeout 10 s + 2 s) before a submission again: under the 30 s a request waited before."""


async def test_a_stopped_slurmrestd_is_replaced_by_the_liveness_look(
    redbox_factory: Callable[..., RedBox],
) -> None:
    """SIGSTOP with the default --slurm-timeout (30 s): the liveness look sees it stopped and replaces
    it; 40 keyed submissions and status looks sent meanwhile each answer within their bound, one job
    per key."""
    box = redbox_factory("--slurm-api", "rest", user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=120)
    prefix = f"reststop-{os.urandom(3).hex()}"
    keys = [f"{prefix}-{n}" for n in range(40)]
    loop = asyncio.get_running_loop()

    async def timed_submit(key: str) -> tuple[JobId, float]:
        started = loop.time()
        job_id = await client.submit(JobSpec(script=SCRIPT, partition="debug", idempotency_key=key))
        return job_id, loop.time() - started

    async def timed_states(job_ids: list[JobId]) -> float:
        started = loop.time()
        states = await client.states(job_ids)
        assert set(states) == set(job_ids)
        return loop.time() - started

    try:
        first = [(await timed_submit(k))[0] for k in keys[:5]]
        await timed_states(first)
        hung = slurmside.slurmrestd_pid(box)
        assert hung is not None
        os.kill(hung, signal.SIGSTOP)
        answers = await asyncio.gather(
            *(timed_submit(k) for k in keys[5:]), *(timed_states(first) for _ in range(4))
        )
        submits = [a for a in answers if isinstance(a, tuple)]
        looks = [a for a in answers if isinstance(a, float)]
        job_ids = first + [job_id for job_id, _ in submits]
        slowest = max(seconds for _, seconds in submits)
        print(f"slowest submission {slowest:.1f} s, slowest status look {max(looks):.1f} s")
        assert slowest < SUBMIT_BOUND
        assert max(looks) < STATUS_BOUND
        assert len(set(job_ids)) == len(keys)
        in_slurm = _keys_in_slurm(prefix)
        assert set(in_slurm) == set(keys)
        assert set(in_slurm.values()) == {1}, "no key has two jobs"
        assert not _alive(hung), "the stopped slurmrestd was killed"
        assert box.log().count("slurmrestd hung: replaced") == 1
    finally:
        await client.close()
