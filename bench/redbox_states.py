"""Batched state of 1000 jobs through red-box vs 1000 ``scontrol show job`` calls.

Prints the time of each, their ratio, and how many Slurm commands red-box
spawned for the batched query (target: at most 2, one squeue and at most
one sacct). The 1000 jobs are held one-liners submitted directly with
sbatch beforehand and cancelled afterwards.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from redbox_common import red_box, sbatch_held, scancel

from wlmvk.core import logging as wlog
from wlmvk.core.jobs import JobId

COUNT = 1000


def scontrol_each(job_ids: list[int]) -> float:
    started = time.perf_counter()
    for job_id in job_ids:
        subprocess.run(["scontrol", "show", "job", str(job_id)], capture_output=True, check=True)
    return time.perf_counter() - started


async def batched(job_ids: list[int]) -> tuple[float, int, int]:
    async with red_box() as (parts, client):
        await client.info()
        before = parts.runner.spawned
        started = time.perf_counter()
        states = await client.states([JobId(j) for j in job_ids])
        elapsed = time.perf_counter() - started
        return elapsed, parts.runner.spawned - before, len(states)


async def gone_jobs(job_ids: list[int]) -> tuple[float, int]:
    """The same query for ids Slurm no longer holds: squeue finds none, sacct answers all."""
    async with red_box() as (parts, client):
        await client.info()
        before = parts.runner.spawned
        started = time.perf_counter()
        await client.states([JobId(j) for j in job_ids])
        return time.perf_counter() - started, parts.runner.spawned - before


def main() -> int:
    wlog.configure("warning")
    count = int(sys.argv[1]) if len(sys.argv) > 1 else COUNT
    ids = asyncio.run(sbatch_held(count))
    try:
        loop_time = scontrol_each(ids)
        box_time, spawned, answered = asyncio.run(batched(ids))
    finally:
        scancel(ids)
    print(f"jobs: {count}")
    print(f"{count} x scontrol show job: {loop_time:7.3f} s")
    print(f"one JobStates via red-box:  {box_time:7.3f} s  ({answered} states)")
    print(f"ratio (scontrol loop / red-box): {loop_time / box_time:6.1f}x")
    print(f"Slurm commands spawned by red-box for the batch: {spawned}")
    missing = [max(ids) + 1_000_000 + i for i in range(count)]
    gone_time, gone_spawned = asyncio.run(gone_jobs(missing))
    print(
        f"{count} ids unknown to squeue (answered by sacct/record): {gone_time:.3f} s, "
        f"{gone_spawned} Slurm commands"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
