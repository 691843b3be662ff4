"""The cost of ``kubectl top`` per interval: one JobUsage call for every running job, shared by
/stats/summary and every node's /metrics/resource; red-box reads it in sstat slices within the
kubelet's budget (0.7 x a 10 s --stats-interval).

Slurm here has 2 CPUs (CR_CORE, no oversubscription), so at most 2 jobs run
at once: 1,000 running *jobs* cannot be had. What sstat pays per running job
is one RPC to the node's slurmd per running step, so the bench runs one job
holding STEPS running steps (``srun --overlap`` sleeps) and asks for it
together with held jobs up to IDS ids in all (the kubelet asks only for the
pods it last saw running; held ids stand in for jobs that stopped since, and
cost slurmctld one lookup each). Measured in one run, median of ROUNDS:

- one JobUsage through red-box with the kubelet's budget (what the kubelet pays once per
  --stats-interval): its time, the jobs answered and unanswered, and its sstat slices (how many
  finished within the budget, and the running steps they read),
- interleaved with it, the call it replaced: one ``sstat -a`` over every id, killed after red-box's
  30 s --slurm-timeout as red-box did,
- one interval as metrics-server and the Summary API ask it: the kubelet's usage source
  (``kubelet.stats``) over that red-box, asked for /metrics/resource of NODES nodes and for
  /stats/summary at once: its JobUsage calls, Slurm commands and wall time,
- one ``sstat -a`` per id, as a per-pod poller would (the loop / batch ratio),
- building the /stats/summary body and the /metrics/resource text for IDS pods (the
  kubelet's CPU per scrape).

    .venv/bin/python bench/kubelet_stats.py [--ids 1000] [--steps 200] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from redbox_common import red_box, sbatch_held, scancel

from wlmvk.core import logging as wlog
from wlmvk.core.backend import Backend
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage, UsageSample
from wlmvk.kubelet.api.stats import resource_metrics, sampling, summary
from wlmvk.kubelet.api.stats.ledger import CpuLedger
from wlmvk.redbox.slurm.processes.runner import Completed, Runner

NODES = [f"slurm-c-n{i}" for i in range(5)]
INTERVAL = 10.0  # the kubelet's default --stats-interval
BUDGET = INTERVAL * sampling.BUDGET_SHARE  # what the kubelet gives each JobUsage call
BEFORE_TIMEOUT = 30.0  # red-box's --slurm-timeout, which ended the one sstat call before


class SstatLog:
    """Notes each sstat red-box runs: whether it finished, and the rows it printed."""

    def __init__(self, runner: Runner) -> None:
        self.calls: list[tuple[bool, int]] = []
        inner = runner.run

        async def run(argv: Sequence[str], **options: Any) -> Completed:
            if argv[0] != "sstat":
                return await inner(argv, **options)
            try:
                done = await inner(argv, **options)
            except Unavailable:
                self.calls.append((False, 0))
                raise
            self.calls.append((done.ok, sum(1 for line in done.stdout.splitlines() if "|" in line)))
            return done

        runner.run = run  # type: ignore[method-assign]


def sstat_all(job_ids: list[int]) -> float | None:
    """The JobUsage before slices: one ``sstat -a`` over every id; None when killed at 30 s."""
    argv = ["sstat", "-a", "-n", "--parsable2", "-o", "JobID,TRESUsageInTot"]
    started = time.perf_counter()
    try:
        subprocess.run(
            [*argv, "-j", ",".join(map(str, job_ids))], capture_output=True, timeout=BEFORE_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - started


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


def pod_jobs(job_ids: list[int], started: datetime) -> list[summary.PodJob]:
    """The kubelet's view: one running pod per job id, spread over the NODES."""
    return [
        summary.PodJob("default", f"p{j}", f"uid-{j}", NODES[i % len(NODES)], "job", JobId(j), started)
        for i, j in enumerate(job_ids)
    ]


async def batched(job_ids: list[int], rounds: int) -> dict[str, Any]:
    async with red_box() as (parts, client):
        await client.info()
        sstats = SstatLog(parts.runner)
        times: list[float] = []
        before = parts.runner.spawned
        answered, failures = 0, []
        calls: list[dict[str, Any]] = []
        one_sstat: list[float | None] = []
        for _ in range(rounds):
            one_sstat.append(await asyncio.to_thread(sstat_all, job_ids))
            sstats.calls.clear()
            started = time.perf_counter()
            try:
                sample = await client.usage([JobId(j) for j in job_ids], budget=BUDGET)
            except Unavailable as exc:  # a listing that failed: a result, not a crash
                failures.append(exc.message)
                sample = UsageSample({})
            times.append(time.perf_counter() - started)
            answered = max(answered, len(sample.usages))
            calls.append(
                {
                    "answered": len(sample.usages),
                    "unanswered": len(sample.unanswered),
                    "reason": sample.reason,
                    "slices": len(sstats.calls),
                    "slices_finished": sum(1 for ok, _ in sstats.calls if ok),
                    "steps_read": sum(rows for ok, rows in sstats.calls if ok),
                }
            )
        per_call = (parts.runner.spawned - before) // rounds
        # One interval as it comes: every node's /metrics/resource and /stats/summary at once.
        source = sampling.StatsSource(
            backend=cast(Backend, client),
            pods=lambda: pod_jobs(job_ids, datetime.now(UTC) - timedelta(minutes=1)),
            nodes=lambda: NODES,
            interval=INTERVAL,
        )
        spawned, started = parts.runner.spawned, time.perf_counter()
        texts = await asyncio.gather(
            *(source.resource_metrics(node) for node in NODES), source.summary(), return_exceptions=True
        )
        interval = {
            "scrapes": len(NODES) + 1,
            "jobusage_calls": source.calls,
            "slurm_commands": parts.runner.spawned - spawned,
            "wall_ms": (time.perf_counter() - started) * 1000,
            # Each /metrics/resource says whether its figures could be had, as the kubelet does.
            "scrape_errors": sum(1 for t in texts if isinstance(t, str) and "resource_scrape_error 1" in t),
        }
        return {
            "times": times,
            "calls": calls,
            "one_sstat": one_sstat,
            "failures": failures,
            "slurm_commands_per_call": per_call,
            "answered": answered,
            "interval": interval,
        }


def usage_of(count: int, now: datetime) -> dict[JobId, JobUsage]:
    return {JobId(i): JobUsage(JobId(i), timedelta(seconds=i), i * 4096, now) for i in range(count)}


def build_summary(count: int, rounds: int) -> list[float]:
    now = datetime.now(UTC)
    pods = pod_jobs(list(range(count)), now - timedelta(60))
    usage = usage_of(count, now)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        summary.summary(nodes=NODES, started=now, pods=pods, usage=usage, previous={}, now=now)
        times.append(time.perf_counter() - started)
    return times


def render_metrics(count: int, rounds: int) -> list[float]:
    """The /metrics/resource text of every node for ``count`` pods (what one interval's scrapes cost)."""
    now = datetime.now(UTC)
    pods = pod_jobs(list(range(count)), now - timedelta(60))
    usage = usage_of(count, now)
    ledger = CpuLedger().advance(pods, usage)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for node in NODES:
            resource_metrics.render(nodes=[node], pods=pods, usage=usage, ledger=ledger, sampled=now)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="", help="also write the figures here")
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
        result = asyncio.run(batched(ids, args.rounds))
        loop = sstat_each(ids)
        build = build_summary(args.ids, args.rounds)
        render = render_metrics(args.ids, args.rounds)
    finally:
        scancel([job, *held])
    times, interval = result["times"], result["interval"]
    batch = statistics.median(times)
    print(f"ids asked: {len(ids)} (1 running job with {seen} running steps incl. batch, {len(held)} held)")
    print(
        f"one JobUsage via red-box, budget {BUDGET:g} s: {batch * 1000:8.1f} ms median of {args.rounds} "
        f"({' '.join(f'{t * 1000:.0f}' for t in times)} ms); "
        f"{result['slurm_commands_per_call']} Slurm commands per call"
    )
    for call in result["calls"]:
        print(
            f"  answered {call['answered']} job(s), unanswered {call['unanswered']}; sstat slices finished "
            f"{call['slices_finished']}/{call['slices']}, running steps read {call['steps_read']}"
            + (f"; reason: {call['reason']}" if call["reason"] else "")
        )
    before = [t for t in result["one_sstat"] if t is not None]
    print(
        "before, one sstat -a over every id (killed at 30 s): "
        + " ".join("killed" if t is None else f"{t * 1000:.0f}" for t in result["one_sstat"])
        + " ms"
        + (f"; median of those that finished {statistics.median(before) * 1000:.0f} ms" if before else "")
    )
    for failure in result["failures"]:
        print(f"  a JobUsage call failed: {failure}")
    print(
        f"one interval, {interval['scrapes']} scrapes at once ({len(NODES)} x /metrics/resource/<node>,"
        f" /stats/summary): {interval['jobusage_calls']} JobUsage call, {interval['slurm_commands']}"
        f" Slurm command, {interval['wall_ms']:.1f} ms, {interval['scrape_errors']} scrape errors"
    )
    print(f"{len(ids)} x sstat -a -j ID:  {loop * 1000:8.1f} ms")
    print(f"ratio (sstat per id / one JobUsage): {loop / batch:6.1f}x")
    print(f"building /stats/summary for {args.ids} pods: {statistics.median(build) * 1000:6.1f} ms median")
    print(
        f"/metrics/resource of {len(NODES)} nodes for {args.ids} pods:"
        f" {statistics.median(render) * 1000:6.1f} ms median"
    )
    if args.json:
        figures = {
            "ids": len(ids),
            "running_steps": seen,
            "held": len(held),
            "nodes": len(NODES),
            "rounds": args.rounds,
            "jobusage_ms": batch * 1000,
            "jobusage_rounds_ms": [t * 1000 for t in times],
            "budget_s": BUDGET,
            "calls": result["calls"],
            "before_one_sstat_rounds_ms": [None if t is None else t * 1000 for t in result["one_sstat"]],
            "answered": result["answered"],
            "failures": result["failures"],
            "slurm_commands_per_call": result["slurm_commands_per_call"],
            "interval": interval,
            "sstat_each_ms": loop * 1000,
            "x_sstat_each": loop / batch,
            "summary_build_ms": statistics.median(build) * 1000,
            "metrics_render_ms": statistics.median(render) * 1000,
        }
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
