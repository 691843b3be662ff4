"""Benchmark: ``kubectl logs -f`` as users run it, a line written by the job -> on kubectl's stdout.

``--pods`` pods run real Slurm jobs (red-box as the benchmarks' own Slurm user) that print
their clock (``date +%s.%N``) every 0.25 s; ``--followers`` real ``kubectl logs -f``
processes (the kubectl built by dev/scripts/kube-local when there is one) follow them at once,
spread over the pods, through the in-memory API server's pods/log proxy to the kubelet's
HTTPS API, which follows the job's output through red-box. Each line's latency = the time
kubectl printed it - the time in it (same host, same clock); lines written before their
follower started (its backlog) are left out. Prints p50/p95/max (goal p95 < 1 s); ``--json``.

The node has 2 cores, one per job: two pods run at once, hence 2 pods x 10 followers.

    .venv/bin/python bench/logs_follow.py --pods 2 --followers 20
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from kubelet_stack import wait_for_node, wait_until
from kubelet_submit import pod
from slurm_side import ROOT, BenchRedBox, Processes, apiserver_and_kubelet, bench_system, main_with_json

from wlmvk.core import names
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient


def kubectl() -> str:
    built = subprocess.run(
        [str(ROOT / "dev" / "scripts" / "kube-local"), "bin"], capture_output=True, text=True
    )
    path = Path(built.stdout.strip()) / "kubectl"
    return str(path) if built.returncode == 0 and path.is_file() else shutil.which("kubectl") or "kubectl"


def job_pod(namespace: str, index: int, node: str, lines: int) -> dict[str, Any]:
    """kubelet_submit's pod, running a job that prints its clock ``lines`` times, 4 a second."""
    body = pod(namespace, index, node)
    body["metadata"]["annotations"][names.ANNOTATION_BATCH] = (
        "#!/bin/sh\n#SBATCH --time=5\nsleep 3\n"
        f"i=0; while [ $i -lt {lines} ]; do date +%s.%N; sleep 0.25; i=$((i+1)); done\n"
    )
    return body


async def follow(argv: list[str], started: float, until: float, latencies: list[float]) -> int:
    """One kubectl follower until its stream ends or ``until`` (then it is killed)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    count = 0
    try:
        while True:
            raw = await asyncio.wait_for(proc.stdout.readline(), max(0.1, until - time.time()))
            if not raw:
                break
            now = time.time()
            try:
                written = float(raw.decode().strip())
            except ValueError:
                continue
            if written >= started:
                latencies.append(now - written)
                count += 1
    except TimeoutError:
        proc.kill()
    await proc.wait()
    return count


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    async with bench_system() as (red_box, procs):
        return await measured(args, red_box, procs)


async def measured(args: argparse.Namespace, red_box: BenchRedBox, procs: Processes) -> dict[str, Any]:
    kubeconfig, cluster, _ = await apiserver_and_kubelet(red_box, procs, "lf")
    kube = await KubeClient.connect(str(kubeconfig))
    try:
        node = names.node_name(cluster, "debug")
        await wait_for_node(kube, node)
        await kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster}}
        )
        for index in range(args.pods):
            await kube.create(PODS, job_pod(cluster, index, node, args.lines), namespace=cluster)

        async def all_running() -> bool:
            listing = await kube.list(PODS, namespace=cluster)
            return all((p.get("status") or {}).get("phase") == "Running" for p in listing["items"])

        await wait_until(all_running, timeout=600, every=0.5)
        binary = kubectl()
        started = time.time()
        latencies: list[float] = []
        followers = [
            follow(
                [
                    binary,
                    "--kubeconfig",
                    str(kubeconfig),
                    "-n",
                    cluster,
                    "logs",
                    "-f",
                    f"{cluster}-{i % args.pods}",
                ],
                started + 1.0,  # what a follower prints within its first second is backlog
                started + args.lines * 0.25 + 60,
                latencies,
            )
            for i in range(args.followers)
        ]
        counts = await asyncio.gather(*followers)
    finally:
        await kube.close()
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))]
    figures = {
        "pods": args.pods,
        "followers": args.followers,
        "kubectl": binary,
        "lines_per_follower": counts,
        "lines": len(latencies),
        "p50_s": statistics.median(latencies),
        "p95_s": p95,
        "max_s": latencies[-1],
    }
    print(f"kubectl: {binary}")
    print(
        f"{args.followers} kubectl logs -f at once on {args.pods} running jobs;"
        f" lines seen per follower: {counts}"
    )
    print(
        f"line written -> on kubectl's stdout, {len(latencies)} lines: p50 {figures['p50_s'] * 1000:.0f} ms,"
        f" p95 {p95 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms  (goal p95 < 1 s)"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2)
    parser.add_argument("--followers", type=int, default=20)
    parser.add_argument("--lines", type=int, default=120, help="lines each job prints, 4 a second")
    main_with_json(parser, measure)


if __name__ == "__main__":
    main()
