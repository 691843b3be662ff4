"""Benchmark: ``--count`` SlurmJobs applied at once, end to end, until every one has Succeeded.

The whole system as processes: the in-memory API server with its controllers (the scheduler
binds the job pods), ``wlmvk kubelet``, ``wlmvk operator`` and red-box (as the benchmarks'
own Slurm user, see slurm_side.py), on the real Slurm. One ``kubectl apply`` of a List of
``--count`` SlurmJobs (no staging: a batch script only, each printing one line); a watch
takes the moment each SlurmJob's status says Succeeded. Prints the throughput (SlurmJobs
per second, apply to the last one Succeeded), p50/p95 from the apply to each one
Succeeded, and the operator's CPU seconds and peak RSS (sampled every 0.2 s, and VmHWM).
``--json FILE`` writes the figures for bench/run-all. Cancels every job it made.

    .venv/bin/python bench/slurmjobs_e2e.py --count 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kubelet_stack import wait_for_node
from logs_follow import kubectl
from slurm_side import (
    ROOT,
    WLMVK,
    BenchRedBox,
    Processes,
    apiserver_and_kubelet,
    bench_system,
    main_with_json,
    process_cpu,
    pythonpath,
)
from status_steady import rss_mb, sample_rss

from wlmvk.core import names
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch
from wlmvk.operator.controller import SLURMJOBS


def slurmjobs(namespace: str, count: int) -> str:
    items = [
        {
            "apiVersion": "wlm.sylabs.io/v1alpha1",
            "kind": "SlurmJob",
            "metadata": {"name": f"sj{i}", "namespace": namespace},
            "spec": {"batch": f"#!/bin/sh\n#SBATCH --time=5\necho slurmjob {i}\n"},
        }
        for i in range(count)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


async def run_kubectl(binary: str, kubeconfig: Path, *args: str, stdin: str = "") -> str:
    proc = await asyncio.create_subprocess_exec(
        binary, "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(stdin.encode())
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {err.decode()}")
    return out.decode()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_system() as (red_box, procs):
        return await measured(args, red_box, procs)


async def measured(args: argparse.Namespace, red_box: BenchRedBox, procs: Processes) -> dict[str, Any]:
    kubeconfig, cluster, _ = await apiserver_and_kubelet(
        red_box, procs, "sj", client_ca=False, controllers=True
    )
    binary = kubectl()
    for crd in ("slurmjobs.yaml", "wlmjobs.yaml"):
        await run_kubectl(binary, kubeconfig, "apply", "-f", str(ROOT / "manifests" / "crds" / crd))
    env = {**os.environ, "PYTHONPATH": pythonpath(red_box.source)}
    operator = procs.spawn(
        [sys.executable, "-c", WLMVK, "operator", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
         "--health-port", "0", "--log-level", "warning"],
        "operator.log", env=env,
    )  # fmt: skip
    peak = [0.0]
    sampler = asyncio.create_task(sample_rss(operator.pid, peak))
    kube = await KubeClient.connect(str(kubeconfig))
    done: dict[str, float] = {}
    failed: dict[str, str] = {}
    finished = asyncio.Event()
    try:
        await wait_for_node(kube, names.node_name(cluster, "debug"))
        namespace = cluster
        await run_kubectl(binary, kubeconfig, "create", "namespace", namespace)

        async def watcher() -> None:
            async for event in watch(kube, SLURMJOBS, WatchOptions(namespace=namespace)):
                items = event.items if isinstance(event, Listed) else [event.object]
                for item in items:
                    name = item["metadata"]["name"]
                    phase = (item.get("status") or {}).get("status", "")
                    if phase == "Succeeded" and name not in done:
                        done[name] = time.perf_counter()
                    elif phase == "Failed":
                        failed[name] = json.dumps(item.get("status"))[:300]
                if len(done) + len(failed) >= args.count:
                    finished.set()

        watching = asyncio.create_task(watcher())
        await asyncio.sleep(0.5)
        cpu0 = process_cpu(operator.pid)
        start = time.perf_counter()
        await run_kubectl(binary, kubeconfig, "apply", "-f", "-", stdin=slurmjobs(namespace, args.count))
        applied = time.perf_counter() - start
        await asyncio.wait_for(finished.wait(), args.timeout)
        total = time.perf_counter() - start
        cpu = process_cpu(operator.pid) - cpu0
        watching.cancel()
    finally:
        sampler.cancel()
        hwm = rss_mb(operator.pid, "VmHWM")
        await kube.close()
    latencies = sorted(t - start for t in done.values())
    figures = {
        "count": args.count,
        "succeeded": len(done),
        "failed": len(failed),
        "apply_s": applied,
        "total_s": total,
        "per_s": len(done) / total,
        "p50_s": statistics.median(latencies),
        "p95_s": latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))],
        "operator_cpu_s": cpu,
        "operator_rss_peak_sampled_mb": peak[0],
        "operator_rss_hwm_mb": hwm,
    }
    print(f"{args.count} SlurmJobs applied in {applied:.1f} s; {len(done)} Succeeded, {len(failed)} Failed")
    for name, why in list(failed.items())[:3]:
        print(f"  failed {name}: {why}")
    print(
        f"all settled after {total:.1f} s: {figures['per_s']:.2f} SlurmJobs/s; apply -> Succeeded"
        f" p50 {figures['p50_s']:.1f} s, p95 {figures['p95_s']:.1f} s"
    )
    print(f"operator: {cpu:.1f} CPU s, peak RSS sampled {peak[0]:.0f} MB, VmHWM {hwm:.0f} MB")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for all to settle")
    main_with_json(parser, measure)


if __name__ == "__main__":
    main()
