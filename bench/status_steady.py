"""Benchmark: what status costs Slurm at steady state, per minute, and how soon a change shows.

N pods (1000) bound to one virtual node run held jobs (``#SBATCH --hold``: PENDING, using
nothing), through the whole system at its default intervals: the in-memory API server,
``wlmvk kubelet`` and red-box as processes, red-box as the benchmarks' own Slurm user
(``wlmvk-bench``: see slurm_side.py). Once every pod has its job, the daemons' own per-user
RPC counters are read before and after a window (``--window`` s): slurmctld's (``sdiag``) and
slurmdbd's (``sacctmgr show stats``; sacct talks to it). Shims on red-box's PATH name the
commands behind them; red-box's CPU counts its reaped children (squeue, scontrol), and its
own slurmrestd's (a live child) is read apart. Per kubelet status interval (5 s) the goal is
<= 2 RPCs per cluster.

Then ``--changes`` jobs are cancelled one at a time at random moments (``scancel`` as root:
a state change made in Slurm), and the time from the scancel to the pod's status written
(phase no longer Pending, seen on a watch) is taken: p95 goal <= interval + 1 s.

``--source DIR`` runs red-box and the kubelet from another source tree (``git archive REV
src``), for a before/after in one run; ``--json FILE`` writes the figures for bench/run-all.
Every job is cancelled at the end (``scancel -u wlmvk-bench``: only benchmarks run as it).

    .venv/bin/python bench/status_steady.py --pods 1000 --window 60
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import cpu_meter
from kubelet_stack import wait_for_node, wait_until
from kubelet_submit import pod
from quantiles import quantile
from slurm_side import (
    ROOT,
    USER,
    BenchRedBox,
    Processes,
    apiserver_and_kubelet,
    bench_system,
    main_with_json,
    process_cpu,
    slurmctld_counters,
    slurmdbd_counters,
)

from wlmvk.core import names
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch

TICK = 5.0  # the kubelet's default --status-interval
PY_SPY = "/var/tmp/pyspy/bin/py-spy"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory (VmRSS) or its high-water mark (VmHWM), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


async def sample_rss(pid: int, peak: list[float]) -> None:
    """Every 0.2 s, the largest RSS seen so far into ``peak[0]`` (sampled, not after a GC)."""
    while True:
        peak[0] = max(peak[0], rss_mb(pid))
        await asyncio.sleep(0.2)


def profile(
    directory: str, pids: dict[str, int], seconds: float, label: str
) -> list[subprocess.Popen[bytes]]:
    """py-spy (``--profile DIR``) on each process through the window: DIR/<label>-<name>.txt."""
    if not directory:
        return []
    Path(directory).mkdir(parents=True, exist_ok=True)
    spies = []
    for name, pid in pids.items():
        out = Path(directory) / f"{label}-{name}.txt"
        argv = [
            PY_SPY,
            "record",
            "-p",
            str(pid),
            "-d",
            str(int(seconds) - 2),
            "-f",
            "raw",
            "-o",
            str(out),
            "-r",
            "50",
        ]
        spies.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def restd_cpu(red_box: BenchRedBox) -> float:
    """CPU seconds so far of red-box's own slurmrestd (a live child: not in red-box's reaped
    children's time); 0 for a red-box without one."""
    return cpu_meter.reading(red_box.pid())["slurmrestd"]


async def measure(args: argparse.Namespace, source: Path, label: str, api: str = "auto") -> dict[str, Any]:
    async with bench_system(source, [] if api == "auto" else ["--slurm-api", api]) as (red_box, procs):
        return await measured(args, red_box, procs, label)


async def measured(
    args: argparse.Namespace, red_box: BenchRedBox, procs: Processes, label: str
) -> dict[str, Any]:
    kubeconfig, cluster, kubelet = await apiserver_and_kubelet(
        red_box, procs, "st", "--max-pods", str(max(1000, args.pods)), client_ca=False
    )
    peak = [0.0]
    sampler = asyncio.create_task(sample_rss(kubelet.pid, peak))
    kube = await KubeClient.connect(str(kubeconfig))
    node = names.node_name(cluster, "debug")
    try:
        await wait_for_node(kube, node)
        await kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster}}
        )
        job_of: dict[str, int] = {}
        phase_of: dict[str, str] = {}
        moved: dict[str, float] = {}

        async def watcher() -> None:
            async for event in watch(kube, PODS, WatchOptions(namespace=cluster)):
                items = event.items if isinstance(event, Listed) else [event.object]
                for item in items:
                    name = item["metadata"]["name"]
                    job = (item["metadata"].get("annotations") or {}).get(names.ANNOTATION_JOB_ID)
                    if job:
                        job_of[name] = int(job)
                    phase = (item.get("status") or {}).get("phase", "")
                    # The kubelet's own status write (the API server's default has no containers).
                    written = "containerStatuses" in (item.get("status") or {})
                    phase_of[name] = phase if written else ""
                    if phase not in ("", "Pending") and name not in moved:
                        moved[name] = time.perf_counter()

        watching = asyncio.create_task(watcher())
        gate = asyncio.Semaphore(32)

        async def create(index: int) -> None:
            async with gate:
                await kube.create(PODS, pod(cluster, index, node), namespace=cluster)

        start = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(args.pods)))

        async def all_submitted() -> bool:
            # Steady state: every pod has its job and the kubelet's first status (10,000 first
            # writes take minutes; a window over them measures the writes, not status).
            return len(job_of) >= args.pods and all(p == "Pending" for p in phase_of.values())

        await wait_until(all_submitted, timeout=1200, every=0.5)
        print(
            f"[{label}] {args.pods} pods with jobs and the kubelet's Pending status"
            f" after {time.perf_counter() - start:.1f} s"
        )
        await asyncio.sleep(args.settle)

        # --- the window: counters before and after ---
        ctld0, dbd0, commands0 = slurmctld_counters(), slurmdbd_counters(), len(red_box.commands())
        cpu0 = {
            "red-box": red_box.cpu_seconds(),
            "slurmrestd": restd_cpu(red_box),
            "kubelet": process_cpu(kubelet.pid),
        }
        t0 = time.perf_counter()
        spies = profile(args.profile, {"red-box": red_box.pid(), "kubelet": kubelet.pid}, args.window, label)
        await asyncio.sleep(args.window)
        for spy in spies:
            spy.wait()
        ctld1, dbd1, commands = slurmctld_counters(), slurmdbd_counters(), red_box.commands()
        elapsed = time.perf_counter() - t0
        cpu = {
            "red-box": red_box.cpu_seconds() - cpu0["red-box"],
            "slurmrestd": restd_cpu(red_box) - cpu0["slurmrestd"],
            "kubelet": process_cpu(kubelet.pid) - cpu0["kubelet"],
        }
        ctld, dbd = ctld1.minus(ctld0), dbd1.minus(dbd0)
        per_min = 60.0 / elapsed
        ran: dict[str, int] = {}
        for name in commands[commands0:]:
            ran[name] = ran.get(name, 0) + 1
        ctld_user = ctld.by_user.get(USER, 0) * per_min
        dbd_user = dbd.by_user.get(USER, 0) * per_min
        ticks = elapsed / TICK  # the kubelet's ticks (REST red-box runs squeue only after a change)
        result: dict[str, Any] = {
            "kubelet_cpu_s_per_tick": cpu["kubelet"] / ticks if ticks else None,
            "kubelet_rss_peak_sampled_mb": peak[0],
            "kubelet_rss_hwm_mb": rss_mb(kubelet.pid, "VmHWM"),
            "pods": args.pods,
            "window_s": elapsed,
            "restarted": ctld.restarted or dbd.restarted,
            "slurmctld_per_min": ctld_user,
            "slurmdbd_per_min": dbd_user,
            "per_tick": (ctld_user + dbd_user) * TICK / 60.0,
            "commands_per_min": {k: v * per_min for k, v in sorted(ran.items())},
            "all_users_slurmctld_by_type_per_min": {k: v * per_min for k, v in ctld.by_type.items()},
            "all_users_slurmdbd_by_type_per_min": {k: v * per_min for k, v in dbd.by_type.items()},
            "cpu_s_per_min": {k: v * per_min for k, v in cpu.items()},
        }
        print(
            f"[{label}] window {elapsed:.0f} s"
            + (" (a daemon restarted or was reset: figures void)" if result["restarted"] else "")
        )
        print(f"[{label}] RPCs of {USER} per minute: slurmctld {ctld_user:.1f}, slurmdbd {dbd_user:.1f}")
        print(f"[{label}] per {TICK:.0f} s tick interval: {result['per_tick']:.2f}  (goal <= 2)")
        print(
            f"[{label}] red-box's Slurm commands per minute: "
            + ", ".join(f"{k} {v:.1f}" for k, v in result["commands_per_min"].items())
        )
        print(
            f"[{label}] all users' slurmctld RPCs per minute (others' work included): "
            + ", ".join(
                f"{k} {v:.1f}" for k, v in list(result["all_users_slurmctld_by_type_per_min"].items())[:8]
            )
        )
        print(
            f"[{label}] CPU seconds per minute: "
            + ", ".join(f"{k} {v:.2f}" for k, v in result["cpu_s_per_min"].items())
        )

        # --- state change in Slurm -> pod status written ---
        rng = random.Random(7)
        chosen = rng.sample(sorted(job_of), args.changes)
        latencies: list[float] = []
        for name in chosen:
            await asyncio.sleep(rng.uniform(0.2, 2 * TICK / 3))
            changed = time.perf_counter()
            await asyncio.to_thread(subprocess.run, ["scancel", str(job_of[name])], check=True)
            latencies.append(changed)
        await wait_until(lambda: asyncio.sleep(0, all(n in moved for n in chosen)), timeout=120, every=0.2)
        waits = sorted(moved[n] - t for n, t in zip(chosen, latencies, strict=True))
        p50 = statistics.median(waits)
        p95 = quantile(waits, 0.95)
        result |= {"change_p50_s": p50, "change_p95_s": p95, "change_max_s": waits[-1], "changes": len(waits)}
        print(
            f"[{label}] kubelet: CPU per tick {result['kubelet_cpu_s_per_tick'] or 0:.3f} s,"
            f" peak RSS sampled every 0.2 s {peak[0]:.0f} MB, VmHWM {result['kubelet_rss_hwm_mb']:.0f} MB"
        )
        print(
            f"[{label}] scancel -> pod status written, {len(waits)} changes: p50 {p50:.2f} s,"
            f" p95 {p95:.2f} s, max {waits[-1]:.2f} s  (goal p95 <= {TICK + 1:.0f} s)"
        )
        watching.cancel()
        result |= {"kubelet_rss_peak_sampled_mb": peak[0], "kubelet_rss_hwm_mb": rss_mb(kubelet.pid, "VmHWM")}
        return result
    finally:
        sampler.cancel()
        await kube.close()


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    arms: dict[str, Any] = {}
    if args.source:
        arms["before"] = await measure(args, Path(args.source), "before")
    apis = args.slurm_api.split(",")
    for api in apis:
        label = "now" if len(apis) == 1 else f"now-{api}"
        arms[label] = await measure(args, ROOT / "src", label, api)
    return {"pods": args.pods, "window_s": args.window, "tick_s": TICK, "arms": arms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--window", type=float, default=60.0, help="seconds the counters are read over")
    parser.add_argument("--settle", type=float, default=35.0, help="seconds waited before the window")
    parser.add_argument("--changes", type=int, default=40, help="jobs cancelled to time the status path")
    parser.add_argument("--source", default="", help="also run red-box and the kubelet from this src tree")
    parser.add_argument(
        "--slurm-api",
        default="auto",
        help="red-box's --slurm-api; several (cli,rest) measure one arm each, in turn",
    )
    parser.add_argument(
        "--profile", default="", help="py-spy red-box and the kubelet during the window, to DIR"
    )
    main_with_json(parser, main_async)


if __name__ == "__main__":
    main()
