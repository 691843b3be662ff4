"""Benchmark: ``kubectl logs -f`` as users run it, a line written by the job -> on kubectl's stdout.

``--pods`` pods run real Slurm jobs (red-box as the benchmarks' own Slurm user) that print
their clock (``date +%s.%N``) every 0.25 s; ``--followers`` real ``kubectl logs -f``
processes (the kubectl built by dev/scripts/kube-local when there is one) follow them at once,
spread evenly over the pods, through ``--plane``'s API server to the kubelet's HTTPS API, which
follows the job's output through red-box: ``real`` (kube-apiserver of dev/scripts/kube-local,
its own kubeconfig, as users run it), ``memory`` (the in-memory API server's pods/log proxy) or
``both`` (the default; real first, one plane after the other, each with its own kubelet).

Each line's latency = the time kubectl printed it - the time in it (same host, same clock).
A follower's backlog (what its first read brought) and the followers' start (200 kubectl
processes take seconds of CPU to start) are left out: the figures are over a ``--window`` of
seconds that opens once every follower has printed a line, and over the lines written in it.
The kubelet's, red-box's, the API server's (kube-apiserver with etcd, on the real plane) and
the kubectl processes' CPU over that window, divided by the lines the followers printed in it,
is each one's CPU per line. Prints p50/p95/max (goal p95 < 250 ms); ``--json``.

Every pod's job takes one of the node's CPUs for as long as it prints: ``--pods`` jobs must
run at once, so the local Slurm's node must declare at least that many
(``WLMVK_SLURM_CPUS=24 dev/scripts/slurm-local up``; the default 8 is refused with that advice).

    .venv/bin/python bench/logs_follow.py --pods 20 --followers 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import cpu_meter
from apiserver_requests import kubectl
from kubelet_stack import RealPlane, forget_cluster, wait_for_node, wait_until
from kubelet_submit import pod
from quantiles import quantile
from slurm_side import (
    BenchRedBox,
    Processes,
    apiserver_and_kubelet,
    bench_system,
    cancel_bench_jobs,
    main_with_json,
)

from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient

PARTITION = "cpu"  # no memory cap per node (long's would hold 8 jobs), no tests queued there
GOAL_P95_S = 0.25
GRACE_S = 10.0
"""How long after the window a line written in it may still arrive (later ones count as lost)."""


def job_pod(namespace: str, index: int, node: str) -> dict[str, Any]:
    """kubelet_submit's pod, running a job that prints its clock 4 times a second until cancelled."""
    body = pod(namespace, index, node)
    body["metadata"]["annotations"][names.ANNOTATION_BATCH] = (
        "#!/bin/sh\n#SBATCH --time=10\nwhile :; do date +%s.%N; sleep 0.25; done\n"
    )
    return body


def node_cpus(partition: str) -> int:
    """The CPUs of the partition's node in the local Slurm (``sinfo``)."""
    out = subprocess.run(
        ["sinfo", "-h", "-p", partition, "-o", "%c"], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(out[0].rstrip("+")) if out else 0


@dataclass
class Follower:
    """One ``kubectl logs -f``: the lines it printed, each as (written, printed) times."""

    argv: list[str]
    pod: int
    lines: list[tuple[float, float]] = field(default_factory=list)
    first: float = 0.0
    proc: asyncio.subprocess.Process | None = None
    error: str = ""
    """What kubectl said when it ended on its own (before the benchmark stopped it)."""

    async def run(self, stop: asyncio.Event) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        reading = asyncio.ensure_future(self._read(self.proc.stdout))
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if reading.done():
            said = (await self.proc.stderr.read()).decode(errors="replace").strip()
            self.error = f"exit {await self.proc.wait()}: {said[-500:]}"
        stopping.cancel()
        reading.cancel()
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        await self.proc.wait()

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        while raw := await stdout.readline():
            printed = time.time()
            try:
                written = float(raw)
            except ValueError:
                continue
            if not self.first:
                self.first = printed  # this read and what came with it: the backlog
            elif written >= self.first:
                self.lines.append((written, printed))

    def cpu_seconds(self) -> float:
        return cpu_meter.process_times(self.proc.pid)[0] if self.proc else 0.0


def cpu_reading(kubelet: int, red_box: int, followers: list[Follower], real: RealPlane | None,
                apiserver: int | None) -> dict[str, float]:  # fmt: skip
    """CPU seconds so far of the parts a followed line goes through."""
    reading = {
        "kubelet": cpu_meter.process_times(kubelet)[0],
        "red-box": cpu_meter.process_times(red_box)[0],
        "kubectl": sum(f.cpu_seconds() for f in followers),
    }
    if real is not None:
        plane = real.cpu_seconds()
        return reading | {"apiserver": plane["apiserver"], "etcd": plane["etcd"]}
    return reading | {"apiserver": cpu_meter.process_times(apiserver)[0] if apiserver else 0.0}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    if (cpus := node_cpus(PARTITION)) < args.pods:
        raise SystemExit(
            f"the local Slurm's node declares {cpus} CPUs: {args.pods} jobs cannot run at once;"
            f" bring it up with WLMVK_SLURM_CPUS={args.pods + 4} dev/scripts/slurm-local up"
        )
    planes = ["real", "memory"] if args.plane == "both" else [args.plane]
    real = RealPlane.up() if "real" in planes else None
    binary = kubectl()
    print(f"kubectl: {binary}; the node's CPUs: {cpus}", flush=True)
    figures: dict[str, Any] = {
        "pods": args.pods,
        "followers": args.followers,
        "window_s": args.window,
        "node_cpus": cpus,
        "kubectl": binary,
        "planes": {},
    }
    async with bench_system() as (red_box, procs):
        for plane in planes:
            try:
                figures["planes"][plane] = await measured(
                    args, red_box, procs, binary, real if plane == "real" else None
                )
            finally:
                await asyncio.to_thread(cancel_bench_jobs)
    # The first plane's figures at the top level, each plane's apart.
    return figures | figures["planes"][planes[0]] | {"plane": planes[0]}


async def measured(
    args: argparse.Namespace, red_box: BenchRedBox, procs: Processes, binary: str, real: RealPlane | None
) -> dict[str, Any]:
    """The pods and their followers on one plane: ``real``, else a new in-memory API server."""
    kubeconfig, cluster, kubelet = await apiserver_and_kubelet(red_box, procs, "lf", real=real)
    apiserver = None if real is not None else procs.procs[-2].pid
    kube = await KubeClient.connect(str(kubeconfig))
    stop = asyncio.Event()
    try:
        node = names.node_name(cluster, PARTITION)
        await wait_for_node(kube, node)
        await kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster}}
        )
        for index in range(args.pods):
            await kube.create(PODS, job_pod(cluster, index, node), namespace=cluster)

        async def all_running() -> bool:
            listing = await kube.list(PODS, namespace=cluster)
            return all((p.get("status") or {}).get("phase") == "Running" for p in listing["items"])

        await wait_until(all_running, timeout=600, every=0.5)
        argv = [binary, "--kubeconfig", str(kubeconfig), "-n", cluster, "logs", "-f"]
        followers = [
            Follower([*argv, f"{cluster}-{i % args.pods}"], i % args.pods) for i in range(args.followers)
        ]
        launched = time.time()
        running = [asyncio.create_task(f.run(stop)) for f in followers]

        async def all_following() -> bool:
            if ended := [f for f in followers if f.error and not f.first]:
                raise RuntimeError(f"{len(ended)} kubectl logs -f ended before a line: {ended[0].error}")
            return all(f.first for f in followers)

        await wait_until(all_following, timeout=300, every=0.05)
        opened = time.time()
        before = cpu_reading(kubelet.pid, red_box.pid(), followers, real, apiserver)
        await asyncio.sleep(args.window)
        closed = time.time()
        after = cpu_reading(kubelet.pid, red_box.pid(), followers, real, apiserver)
        await asyncio.sleep(GRACE_S)
        stop.set()
        await asyncio.gather(*running)
    finally:
        stop.set()
        kubelet.terminate()
        try:
            await asyncio.to_thread(kubelet.wait, 15)
        except subprocess.TimeoutExpired:
            kubelet.kill()
            await asyncio.to_thread(kubelet.wait)
        if real is not None:  # the real plane outlives the run: its nodes and namespace go
            await forget_cluster(kube, cluster)
            with contextlib.suppress(NotFound):
                await kube.delete(NAMESPACES, cluster)
        await kube.close()
    return figures_of(args, real is not None, followers, (launched, opened, closed), before, after)


def figures_of(
    args: argparse.Namespace,
    real: bool,
    followers: list[Follower],
    moments: tuple[float, float, float],
    before: dict[str, float],
    after: dict[str, float],
) -> dict[str, Any]:
    launched, opened, closed = moments
    latencies = sorted(p - w for f in followers for w, p in f.lines if opened <= w < closed)
    printed = sum(1 for f in followers for _, p in f.lines if opened <= p < closed)
    per_follower = [sum(1 for w, _ in f.lines if opened <= w < closed) for f in followers]
    # A line of the window one follower of its pod printed and another did not (within the grace).
    written: dict[int, set[float]] = {}
    for f in followers:
        written.setdefault(f.pod, set()).update(w for w, _ in f.lines if opened <= w < closed)
    missing = sum(len(written[f.pod]) for f in followers) - sum(per_follower)
    cpu_ms = {part: (after[part] - before[part]) * 1000 / max(1, printed) for part in after}
    p95 = quantile(latencies, 0.95)
    figures = {
        "plane": "real" if real else "memory",
        "start_s": opened - launched,
        "lines": len(latencies),
        "lines_printed_in_window": printed,
        "lines_per_follower_min": min(per_follower),
        "lines_per_follower_max": max(per_follower),
        "missing": missing,
        "p50_s": statistics.median(latencies),
        "p95_s": p95,
        "max_s": latencies[-1],
        "cpu_ms_per_line": cpu_ms,
        "cpu_s": {part: after[part] - before[part] for part in after},
    }
    name = "kube-apiserver" if real else "the in-memory API server"
    print(
        f"{name}: {args.followers} kubectl logs -f on {args.pods} running jobs, all following"
        f" {figures['start_s']:.1f} s after their launch; in the {args.window:.0f} s window:"
        f" {len(latencies)} lines written and printed (per follower {min(per_follower)}-{max(per_follower)}),"
        f" {missing} printed by another follower of the pod but not by one within {GRACE_S:.0f} s"
    )
    print(
        f"{name}: line written -> on kubectl's stdout: p50 {figures['p50_s'] * 1000:.0f} ms,"
        f" p95 {p95 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms (goal p95 < {GOAL_P95_S * 1000:.0f} ms)"
    )
    print(
        f"{name}: CPU per line printed (ms): "
        + ", ".join(f"{part} {ms:.3f}" for part, ms in cpu_ms.items())
        + "; CPU s in the window: "
        + ", ".join(f"{part} {s:.1f}" for part, s in figures["cpu_s"].items()),
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--followers", type=int, default=200)
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured once all follow")
    parser.add_argument(
        "--plane", default="both", choices=("both", "real", "memory"), help="the control plane"
    )
    main_with_json(parser, measure)


if __name__ == "__main__":
    main()
