"""Benchmark: pods bound -> job id annotated, against a sequential sbatch loop and red-box alone.

N held jobs (``#SBATCH --hold``, so the shared Slurm does not run them) are submitted
(a) by a sequential ``sbatch`` loop (what a user's shell script does: the baseline),
(b) straight through red-box with the kubelet's concurrency, and (c) as N pods bound to a
virtual node: the time from creating the first pod to every pod carrying its job id
annotation, end to end (API server, kubelet, red-box, Slurm). Each round runs (a), (b),
(c), (b) again; prints each round's speedup over the loop (target >= 1.4x) and the kubelet's
overhead over red-box alone (the mean of its two runs), and their medians, with the CPU
each part of the system spent per pod in (c) (``cpu_meter``). red-box runs the real Slurm
commands, without the counting shims of the other kubelet benchmarks (a shell per command
would weigh on it alone), through its own slurmrestd as the job owner (``--slurm-api rest``, as
deployed; ``cli``: sbatch, as root). ``--json FILE`` writes the figures for ``bench/run-all``. Cancels
every job it made.

``--plane`` says which control plane (c) goes through: ``real`` (kube-apiserver and etcd of
dev/scripts/kube-local, as users run it), ``memory`` (the in-memory API server, the test
infrastructure), or ``both`` (the default: each round runs (c) on both, in an order rotated from
round to round, and each plane's figures are taken within the round).

    .venv/bin/python bench/kubelet_submit.py --pods 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import cpu_meter
from apiserver_requests import between, kubectl, requests_by_kind
from kubelet_stack import RealPlane, Stack, forget_cluster, scancel_name_prefix, wait_for_node, wait_until

from wlmvk.core import names
from wlmvk.core.jobs import JobSpec
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch
from wlmvk.kubelet.pods.translate import Target, pod_to_job
from wlmvk.kubelet.settings import Settings as KubeletSettings
from wlmvk.redboxclient.client import RedBoxClient

SCRIPT = "#!/bin/sh\n#SBATCH --hold\ntrue\n"
TARGETS = {"real": 1.5, "memory": 1.4}
"""Pods to job ids, x the sequential sbatch loop: the goals (issue 35 names 1.5x on kube-apiserver)."""


def pod(prefix: str, index: int, node: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{prefix}-{index}",
            "namespace": prefix,
            "annotations": {names.ANNOTATION_BATCH: SCRIPT},
        },
        "spec": {"nodeName": node, "containers": [{"name": "job", "image": "none"}]},
    }


def sbatch_loop(count: int, prefix: str) -> float:
    """The same held jobs by a sequential ``sbatch`` loop (named by ``prefix``, to be cancelled)."""
    argv = ["sbatch", "--parsable", "--partition=debug", f"--job-name={prefix}", "--output=/dev/null"]
    start = time.perf_counter()
    for _ in range(count):
        subprocess.run(argv, input=SCRIPT, capture_output=True, text=True, check=True)
    return time.perf_counter() - start


async def red_box_only(stack: Stack, count: int, concurrency: int, prefix: str) -> float:
    """The very jobs the kubelet submits for the same pods (translated by the same code)."""
    client = RedBoxClient(stack.socket, timeout=60)
    gate = asyncio.Semaphore(concurrency)
    target = Target("debug", jobs_root=KubeletSettings.jobs_root)
    specs = []
    for index in range(count):
        body = pod(prefix, index)
        body["metadata"]["uid"] = str(uuid.uuid4())
        spec = pod_to_job(body, target)
        assert isinstance(spec, JobSpec)
        specs.append(spec)

    async def one(spec: JobSpec) -> None:
        async with gate:
            await client.submit(spec)

    start = time.perf_counter()
    await asyncio.gather(*(one(spec) for spec in specs))
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


def cpu_reading(stack: Stack, real: RealPlane | None) -> dict[str, float]:
    """CPU seconds so far by part: red-box and its reaped ``sbatch``, Slurm's daemons, the
    API server (on the real plane: kube-apiserver, etcd, the controller-manager and scheduler),
    the kubelet, and this process (it creates and watches the pods)."""
    reading = cpu_meter.reading(stack.processes[1].pid)
    reading["red-box"] = reading.pop("server")
    stack_cpu = stack.cpu_seconds()
    plane = (
        real.cpu_seconds()
        if real is not None
        else {"apiserver": stack_cpu["apiserver"], "etcd": 0.0, "controllers": 0.0}
    )
    return reading | plane | {"kubelet": stack_cpu.get("kubelet", 0.0)}


async def warm_up(kube: KubeClient, prefix: str, node: str) -> None:
    """One pod through to its job id before the timed pods: the kubelet has listed the pods
    and is serving (a kubelet runs long before pods arrive; its start is not what is timed).
    Pods created before its first listing would be looked up by key first, as after a restart."""
    body = pod(prefix, 0, node)
    body["metadata"]["name"] = warm = f"{prefix}-warm-up"  # its job, named so, is cancelled with the rest
    await kube.create(PODS, body, namespace=prefix)

    async def annotated() -> bool:
        got = await kube.get(PODS, warm, namespace=prefix)
        return names.ANNOTATION_JOB_ID in (got["metadata"].get("annotations") or {})

    await wait_until(annotated, timeout=60, every=0.1)


async def through_kubelet(
    stack: Stack, count: int, workers: int, prefix: str, real: RealPlane | None = None
) -> tuple[float, dict[str, float], dict[str, int]]:
    """The kubelet runs as its own process (as deployed); this one creates pods and watches them.
    On ``real`` when given, else on the stack's in-memory API server. The time to every pod
    annotated with its job id, the CPU per pod by part, and (on ``real``) kube-apiserver's
    requests by kind in that time."""
    # Each round has its own node and namespace: the pods of earlier rounds stay out of the way.
    kubeconfig = real.kubeconfig if real is not None else stack.kubeconfig
    kubelet = stack.kubelet(cluster=prefix, submissions=workers, kubeconfig=kubeconfig)
    kube = await KubeClient.connect(str(kubeconfig))
    node = names.node_name(prefix, "debug")
    await wait_for_node(kube, node)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}}
    await kube.create(NAMESPACES, namespace)

    annotated: set[str] = set()
    moments: list[float] = []
    done = asyncio.Event()

    async def watcher() -> None:
        async for event in watch(kube, PODS, WatchOptions(namespace=prefix)):
            items = event.items if isinstance(event, Listed) else [event.object]
            for item in items:
                name = item["metadata"]["name"]
                if name.endswith("-warm-up"):
                    continue
                has_id = names.ANNOTATION_JOB_ID in (item["metadata"].get("annotations") or {})
                if has_id and name not in annotated:
                    annotated.add(name)
                    moments.append(time.perf_counter())
            if len(annotated) >= count:
                done.set()

    watching = asyncio.create_task(watcher())
    await warm_up(kube, prefix, node)
    gate = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with gate:
            await kube.create(PODS, pod(prefix, index, node), namespace=prefix)

    binary = kubectl() if real is not None else ""
    requests_before = await requests_by_kind(binary, real.kubeconfig) if real is not None else {}
    cpu_before = cpu_reading(stack, real)
    start = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(count)))
    created = time.perf_counter() - start
    await asyncio.wait_for(done.wait(), 900)
    elapsed = time.perf_counter() - start
    cpu = cpu_meter.per_job(cpu_before, cpu_reading(stack, real), count)
    requests = (
        between(requests_before, await requests_by_kind(binary, real.kubeconfig)) if real is not None else {}
    )
    print(f"all {count} pods created after {created:.2f} s")
    if requests:
        print(
            f"kube-apiserver requests per pod ({sum(requests.values()) / count:.2f} in all): "
            + ", ".join(f"{kind} {n / count:.2f}" for kind, n in requests.items())
        )
    marks = [moments[int(q * (len(moments) - 1))] - start for q in (0, 0.25, 0.5, 0.75, 1)]
    print("annotated at (first, 25%, 50%, 75%, last): " + ", ".join(f"{m:.2f}" for m in marks) + " s")
    print("CPU per pod during the kubelet run (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    watching.cancel()
    kubelet.terminate()
    kubelet.wait(15)
    if real is not None:  # the real plane outlives the run: its nodes and namespace go
        await forget_cluster(kube, prefix)
        await kube.delete(NAMESPACES, prefix)
    await kube.close()
    return elapsed, cpu, requests


def rotated(planes: list[str], number: int) -> list[str]:
    """``planes`` starting at the ``number``-th (modulo their count): round ``number``'s order."""
    start = number % len(planes)
    return planes[start:] + planes[:start]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    planes = ["real", "memory"] if args.plane == "both" else [args.plane]
    real = RealPlane.up() if "real" in planes else None
    stack = Stack().start(count_commands=False, slurm_api=args.slurm_api)
    rounds: list[dict[str, Any]] = []
    try:
        # The shared Slurm's load drifts: every round measures red-box alone before and after
        # the kubelet and compares with their mean; the rounds' median is the figure.
        for round_ in range(1, args.rounds + 1):
            prefix = f"kb{uuid.uuid4().hex[:5]}"
            through: dict[str, dict[str, Any]] = {}
            try:
                loop = sbatch_loop(args.pods, prefix + "l")
                scancel_name_prefix(prefix)
                before = await red_box_only(stack, args.pods, args.workers, prefix)
                scancel_name_prefix(prefix)
                for plane in rotated(planes, round_ - 1):
                    await cpu_meter.settled()  # the cancellations' accounting stays out of the readings
                    elapsed, cpu, requests = await through_kubelet(
                        stack,
                        args.pods,
                        args.workers,
                        f"{prefix}{plane[0]}",
                        real if plane == "real" else None,
                    )
                    through[plane] = {"kubelet_s": elapsed, "cpu_ms_per_pod": cpu}
                    if requests:
                        through[plane]["apiserver_requests"] = requests
                    scancel_name_prefix(prefix)
                after = await red_box_only(stack, args.pods, args.workers, prefix + "a")
            finally:
                scancel_name_prefix(prefix)
            baseline = (before + after) / 2
            first = through[planes[0]]
            rounds.append({"loop_s": loop, "redbox_s": baseline, **first, "planes": through})
            print(
                f"round {round_}: sbatch loop {loop:6.2f} s ({args.pods / loop:5.1f} jobs/s),"
                f" red-box only {baseline:6.2f} s (before {before:.2f}, after {after:.2f})"
                + "".join(
                    f", {plane}: pod bound -> job id annotated {t['kubelet_s']:6.2f} s"
                    f" ({args.pods / t['kubelet_s']:5.1f} pods/s), {loop / t['kubelet_s']:.2f}x the loop,"
                    f" {t['kubelet_s'] / baseline:.2f}x red-box's time"
                    for plane, t in through.items()
                ),
                flush=True,
            )
    finally:
        stack.close()
    print(f"pods: {args.pods}, concurrency: {args.workers}, rounds: {len(rounds)}, api: {args.slurm_api}")
    by_plane: dict[str, dict[str, Any]] = {}
    for plane in planes:
        speedups = [r["loop_s"] / r["planes"][plane]["kubelet_s"] for r in rounds]
        ratios = [r["planes"][plane]["kubelet_s"] / r["redbox_s"] for r in rounds]
        by_plane[plane] = {
            "x_loop": statistics.median(speedups),
            "x_redbox_time": statistics.median(ratios),
            "x_loop_rounds": speedups,
        }
        print(f"{plane}: speedups over the loop: " + ", ".join(f"{s:.2f}x" for s in speedups))
        print(f"{plane}: overheads over red-box alone: " + ", ".join(f"{ratio:.2f}x" for ratio in ratios))
        print(
            f"{plane}: pods -> jobs, x the sequential sbatch loop, median: {by_plane[plane]['x_loop']:.2f}x"
            f"  (target >= {TARGETS[plane]}x); kubelet / red-box only, median:"
            f" {by_plane[plane]['x_redbox_time']:.2f}x"
        )
    figures = {"pods": args.pods, "workers": args.workers, "slurm_api": args.slurm_api, "rounds": rounds}
    # The first plane's figures at the top level (the real one when it ran), each plane's apart.
    return figures | by_plane[planes[0]] | {"plane": planes[0], "planes": by_plane}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the figure is their median")
    parser.add_argument(
        "--slurm-api",
        default="rest",
        choices=("rest", "cli"),
        help="red-box's path: rest (its own slurmrestd, as the job owner, as deployed) or cli (sbatch, root)",
    )
    parser.add_argument(
        "--plane",
        default="both",
        choices=("both", "real", "memory"),
        help="where the pods go: kube-apiserver (dev/scripts/kube-local), the in-memory one, or both",
    )
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args()
    figures = asyncio.run(measure(args))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
