"""The Summary API's cost per interval: one JobUsage call (one ``sstat -a``) for every running job.

Slurm here has 2 CPUs (CR_CORE, no oversubscription), so at most 2 jobs run
at once: 1,000 running *jobs* cannot be had. What sstat pays per running job
is one RPC to the node's slurmd per running step, so the bench runs one job
holding STEPS running steps (``srun --overlap`` sleeps) and asks for it
together with held jobs up to IDS ids in all (the kubelet asks only for the
pods it last saw running; held ids stand in for jobs that stopped since, and
cost slurmctld one lookup each). Measured in one run, median of ROUNDS:

- one JobUsage through red-box (what the kubelet pays once per --stats-interval),
- one ``sstat -a`` per id, as a per-pod poller would (the loop / batch ratio),
- building the /stats/summary body for IDS pods (the kubelet's CPU per scrape).

    .venv/bin/python bench/kubelet_stats.py [--ids 1000] [--steps 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from redbox_common import red_box, sbatch_held, scancel

from wlmvk.core import logging as wlog
from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet import summary


def steps_job(steps: int) -> int:
    script = "\n".join(
        [
            "#!/bin/sh",
            "#SBATCH -J bench-stats -o /dev/null -t 10 -p debug -c 1",
            f"for i in $(seq {steps}); do srun --overlap -n1 -c1 sleep 900 & done",
            "wait",
        ]
    )
    done = subprocess.run(["sbatch", "--parsable"], input=script, capture_output=True, text=True, check=True)
    return int(done.stdout.split(";")[0])


def running_steps(job_id: int) -> int:
    out = subprocess.run(
        ["sstat", "-a", "-n", "--parsable2", "-o", "JobID", "-j", str(job_id)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return len(out.split())


def sstat_each(job_ids: list[int]) -> float:
    started = time.perf_counter()
    for job_id in job_ids:
        subprocess.run(
            ["sstat", "-a", "-n", "--parsable2", "-o", "JobID,TRESUsageInTot", "-j", str(job_id)],
            capture_output=True,
            check=False,
        )
    return time.perf_counter() - started


async def batched(job_ids: list[int], rounds: int) -> tuple[list[float], int, int]:
    async with red_box() as (parts, client):
        await client.info()
        times: list[float] = []
        before = parts.runner.spawned
        answered = 0
        for _ in range(rounds):
            started = time.perf_counter()
            usage = await client.usage([JobId(j) for j in job_ids])
            times.append(time.perf_counter() - started)
            answered = len(usage)
        return times, (parts.runner.spawned - before) // rounds, answered


def build_summary(count: int, rounds: int) -> list[float]:
    now = datetime.now(UTC)
    pods = [
        summary.PodJob("default", f"p{i}", f"uid-{i}", "slurm-c-debug", "job", JobId(i), now - timedelta(60))
        for i in range(count)
    ]
    usage = {JobId(i): JobUsage(JobId(i), timedelta(seconds=i), i * 4096, now) for i in range(count)}
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        summary.summary(nodes=["slurm-c-debug"], started=now, pods=pods, usage=usage, previous={}, now=now)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    wlog.configure("warning")
    job = steps_job(args.steps)
    held: list[int] = []
    try:
        held = asyncio.run(sbatch_held(args.ids - 1))
        deadline = time.monotonic() + 600
        while (seen := running_steps(job)) < args.steps + 1:
            if time.monotonic() > deadline:
                print(f"only {seen} running steps after 600 s", file=sys.stderr)
                return 1
            time.sleep(2)
        ids = [job, *held]
        times, spawned, answered = asyncio.run(batched(ids, args.rounds))
        loop = sstat_each(ids)
        build = build_summary(args.ids, args.rounds)
    finally:
        scancel([job, *held])
    batch = statistics.median(times)
    print(f"ids asked: {len(ids)} (1 running job with {seen} running steps incl. batch, {len(held)} held)")
    print(
        f"one JobUsage via red-box: {batch * 1000:8.1f} ms median of {args.rounds} "
        f"({' '.join(f'{t * 1000:.0f}' for t in times)} ms); {answered} job answered; "
        f"{spawned} Slurm command per call"
    )
    print(f"{len(ids)} x sstat -a -j ID:  {loop * 1000:8.1f} ms")
    print(f"ratio (sstat per id / one JobUsage): {loop / batch:6.1f}x")
    print(f"building /stats/summary for {args.ids} pods: {statistics.median(build) * 1000:6.1f} ms median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
