"""Benchmark: ``--count`` SlurmJobs applied at once, end to end, until every one has Succeeded.

The whole system as processes: a control plane, ``wlmvk kubelet``, ``wlmvk operator`` and
red-box (as the benchmarks' own Slurm user, see slurm_side.py), on the real Slurm. One
``kubectl apply`` of a List of ``--count`` SlurmJobs (no staging: a batch script only, each
printing one line); a watch takes the moment each SlurmJob's status says Succeeded. Prints the
throughput (SlurmJobs per second, apply to the last one Succeeded), p50/p95 from the apply to
each one Succeeded, and the operator's CPU seconds and peak RSS (sampled every 0.2 s, and VmHWM).

``--plane``: ``real`` (kube-apiserver, etcd, controller-manager and scheduler of
dev/scripts/kube-local, as users run them), ``memory`` (the in-memory API server with its
controllers), or ``both`` (the default, real first). Beside them, the ``sbatch`` arm: the same
``--count`` scripts submitted by ``sbatch`` alone, as the same user, to the same Slurm, timed
from the first submission to each job leaving the queue (polled every 0.2 s): what the
operator's way is compared with (goal: all settled within 1.15x its time). ``--rounds``
rounds each run every way, in an order rotated from round to round (the shared machine's load
drifts); each plane's ratios are taken against its round's ``sbatch`` and their median is the
figure. ``--status-interval`` sets the kubelet's (its default otherwise), which says how soon
the kubelet learns that a job ended. Each plane's run also prints CPU by part, kube-apiserver's
requests (real plane) and when the SlurmJobs and their pods reached each stage.
``--json FILE`` writes the figures for bench/run-all. Cancels every job it made.

    .venv/bin/python bench/slurmjobs_e2e.py --count 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import cpu_meter
from apiserver_requests import between, kubectl, requests_by_kind, run_kubectl
from kubelet_stack import RealPlane, forget_cluster, wait_for_node
from kubelet_submit import rotated
from quantiles import quantile
from slurm_side import (
    ROOT,
    USER,
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
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch
from wlmvk.kubelet.settings import Settings as KubeletSettings
from wlmvk.operator.controller import SLURMJOBS


def script(index: int) -> str:
    return f"#!/bin/sh\n#SBATCH --time=5\necho slurmjob {index}\n"


def slurmjobs(namespace: str, count: int) -> str:
    items = [
        {
            "apiVersion": "wlm.sylabs.io/v1alpha1",
            "kind": "SlurmJob",
            "metadata": {"name": f"sj{i}", "namespace": namespace},
            "spec": {"batch": script(i)},
        }
        for i in range(count)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def latency_figures(start: float, ends: list[float], count: int) -> dict[str, Any]:
    latencies = sorted(t - start for t in ends)
    total = latencies[-1] if latencies else 0.0
    return {
        "settled": len(latencies),
        "total_s": total,
        "per_s": len(latencies) / total if total else 0.0,
        "p50_s": statistics.median(latencies) if latencies else 0.0,
        "p95_s": quantile(latencies, 0.95) if latencies else 0.0,
    }


def sbatch_alone(count: int, prefix: str, timeout: float) -> dict[str, Any]:
    """The same scripts by ``sbatch`` (as the bench user), each timed to its leaving the queue."""

    def submit(index: int) -> str:
        argv = ["runuser", "-u", USER, "--", "sbatch", "--parsable", f"--job-name={prefix}",
                "--output=/dev/null", "--chdir=/tmp"]  # fmt: skip
        done = subprocess.run(argv, input=script(index), capture_output=True, text=True, check=True)
        return done.stdout.strip().split(";")[0]

    before = cpu_meter.reading(None)
    start = time.perf_counter()
    pending: set[str] = set()
    ends: list[float] = []
    for index in range(count):
        pending.add(submit(index))
    while pending and time.perf_counter() - start < timeout:
        out = subprocess.run(
            ["squeue", "-h", "-u", USER, "-n", prefix, "-o", "%i"], capture_output=True, text=True, check=True
        ).stdout.split()
        gone = pending - set(out)
        ends += [time.perf_counter()] * len(gone)
        pending -= gone
        time.sleep(0.2)
    cpu = seconds_by_part(before, cpu_meter.reading(None))
    figures = {"count": count} | latency_figures(start, ends, count) | {"cpu_s": cpu}
    print(
        f"sbatch alone: {count} scripts, all settled after {figures['total_s']:.1f} s:"
        f" {figures['per_s']:.2f} jobs/s; submit -> left the queue p50 {figures['p50_s']:.1f} s,"
        f" p95 {figures['p95_s']:.1f} s"
    )
    print_cpu("sbatch alone", cpu, count)
    return figures


POD_STAGES = (
    ("pod created", lambda pod: True),
    ("pod bound", lambda pod: bool(pod["spec"].get("nodeName"))),
    ("job id annotated", lambda pod: names.ANNOTATION_JOB_ID in (pod["metadata"].get("annotations") or {})),
    ("pod Running", lambda pod: (pod.get("status") or {}).get("phase") in ("Running", "Succeeded")),
    ("pod Succeeded", lambda pod: (pod.get("status") or {}).get("phase") == "Succeeded"),
)
"""The stages of a SlurmJob's pod, each seen first on a watch (where the time goes)."""


async def pod_stages(kube: KubeClient, namespace: str, stages: dict[str, dict[str, float]]) -> None:
    async for event in watch(kube, PODS, WatchOptions(namespace=namespace)):
        for pod in event.items if isinstance(event, Listed) else [event.object]:
            now = time.perf_counter()
            for stage, reached in POD_STAGES:
                if reached(pod):
                    stages.setdefault(stage, {}).setdefault(pod["metadata"]["name"], now)


def seconds_by_part(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds by part between two readings (parts that did not run left out), and their total."""
    parts = {part: after[part] - before[part] for part in after if after[part] - before[part] > 0}
    return parts | {"total": sum(parts.values())}


def print_cpu(arm: str, cpu: dict[str, float], count: int) -> None:
    parts = ", ".join(f"{k} {v:.1f} ({v * 1000 / count:.1f})" for k, v in cpu.items())
    print(f"{arm}: CPU s (ms per job): {parts}")


def system_cpu(
    red_box: BenchRedBox, kubelet: int, operator: int, real: RealPlane | None, apiserver: int
) -> dict[str, float]:
    """CPU seconds so far of every part a SlurmJob goes through: red-box and its children, Slurm's
    daemons, the control plane (kube-apiserver, etcd, controller-manager and scheduler; or the
    in-memory server with its controllers), the kubelet, the operator, and this process (its watch)."""
    reading = cpu_meter.reading(red_box.pid())
    reading["red-box"] = reading.pop("server")
    reading["red-box children"] = reading.pop("sbatch")
    plane = real.cpu_seconds() if real is not None else {"apiserver": cpu_meter.process_times(apiserver)[0]}
    own = {"kubelet": cpu_meter.process_times(kubelet)[0], "operator": cpu_meter.process_times(operator)[0]}
    return reading | plane | own


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    planes = ["real", "memory"] if args.plane == "both" else [args.plane]
    real = RealPlane.up() if "real" in planes else None
    rounds: list[dict[str, Any]] = []
    async with bench_system() as (red_box, procs):
        # The shared machine's load drifts: each round runs every way, in an order rotated from
        # round to round, and each plane is compared with that round's sbatch alone.
        for number in range(args.rounds):
            round_: dict[str, Any] = {"planes": {}}
            for way in rotated(["sbatch", *planes], number):
                await cpu_meter.settled()
                print(f"round {number + 1}: {way}", flush=True)
                if way == "sbatch":
                    round_["sbatch"] = await asyncio.to_thread(
                        sbatch_alone, args.count, f"sjsbatch{number}", args.timeout
                    )
                else:
                    round_["planes"][way] = await measured(
                        args, red_box, procs, real if way == "real" else None
                    )
            for plane, r in round_["planes"].items():
                r["x_sbatch_time"] = r["total_s"] / round_["sbatch"]["total_s"]
                r["x_sbatch_p95"] = r["p95_s"] / round_["sbatch"]["p95_s"]
                print(
                    f"round {number + 1}, {plane}: all settled in {r['x_sbatch_time']:.2f}x sbatch's time,"
                    f" p95 {r['x_sbatch_p95']:.2f}x sbatch's p95",
                    flush=True,
                )
            rounds.append(round_)
    medians = {
        plane: {
            key: cpu_meter.median([r["planes"][plane][key] for r in rounds])
            for key in ("x_sbatch_time", "x_sbatch_p95")
        }
        for plane in planes
    }
    for plane, m in medians.items():
        print(
            f"{plane}: median of {len(rounds)} rounds: all settled in {m['x_sbatch_time']:.2f}x sbatch's"
            f" time (goal <= 1.15x), p95 {m['x_sbatch_p95']:.2f}x sbatch's p95"
        )
    return {
        "count": args.count,
        "rounds": rounds,
        "medians": medians,
        "plane": planes[0],
        "status_interval_s": args.status_interval or KubeletSettings.status_interval,
    }


async def measured(
    args: argparse.Namespace, red_box: BenchRedBox, procs: Processes, real: RealPlane | None
) -> dict[str, Any]:
    """The SlurmJobs on one plane: ``real``, else the in-memory one."""
    tick = ["--status-interval", str(args.status_interval)] if args.status_interval else []
    kubeconfig, cluster, kubelet = await apiserver_and_kubelet(
        red_box, procs, "sj", *tick, client_ca=False, controllers=True, real=real
    )
    own_apiserver = [] if real is not None else [procs.procs[-2]]  # the in-memory one, started just before
    apiserver = own_apiserver[0].pid if own_apiserver else 0
    binary = kubectl()
    for crd in ("slurmjobs.yaml", "wlmjobs.yaml"):
        await run_kubectl(binary, kubeconfig, "apply", "-f", str(ROOT / "manifests" / "crds" / crd))
    env = {**os.environ, "PYTHONPATH": pythonpath(red_box.source)}
    operator = procs.spawn(
        [sys.executable, "-c", WLMVK, "operator", "--kubeconfig", str(kubeconfig), "--no-leader-elect",
         "--health-port", "0", "--log-level", "warning"],
        f"operator-{cluster}.log", env=env,
    )  # fmt: skip
    peak = [0.0]
    sampler = asyncio.create_task(sample_rss(operator.pid, peak))
    kube = await KubeClient.connect(str(kubeconfig))
    done: dict[str, float] = {}
    failed: dict[str, str] = {}
    stages: dict[str, dict[str, float]] = {}
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
                    stages.setdefault("SlurmJob created", {}).setdefault(name, time.perf_counter())
                    if phase == "Succeeded" and name not in done:
                        done[name] = time.perf_counter()
                    elif phase == "Failed":
                        failed[name] = json.dumps(item.get("status"))[:300]
                if len(done) + len(failed) >= args.count:
                    finished.set()

        watching = asyncio.create_task(watcher())
        following = asyncio.create_task(pod_stages(kube, namespace, stages))
        await asyncio.sleep(0.5)
        await cpu_meter.settled()
        requests0 = await requests_by_kind(binary, kubeconfig) if real is not None else {}
        cpu0 = process_cpu(operator.pid)
        before = system_cpu(red_box, kubelet.pid, operator.pid, real, apiserver)
        start = time.perf_counter()
        await run_kubectl(binary, kubeconfig, "apply", "-f", "-", stdin=slurmjobs(namespace, args.count))
        applied = time.perf_counter() - start
        await asyncio.wait_for(finished.wait(), args.timeout)
        total = time.perf_counter() - start
        cpu = process_cpu(operator.pid) - cpu0
        parts = seconds_by_part(before, system_cpu(red_box, kubelet.pid, operator.pid, real, apiserver))
        requests = await requests_by_kind(binary, kubeconfig) if real is not None else {}
        requests = between(requests0, requests)
        watching.cancel()
        following.cancel()
    finally:
        sampler.cancel()
        hwm = rss_mb(operator.pid, "VmHWM")
        for process in (operator, kubelet, *own_apiserver):  # the next run starts its own
            process.terminate()
            await asyncio.to_thread(process.wait, 15)
        if real is not None:  # the real plane outlives the run: its nodes and namespace go
            await forget_cluster(kube, cluster)
            await run_kubectl(binary, kubeconfig, "delete", "namespace", cluster, "--wait=false")
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
        "p95_s": quantile(latencies, 0.95),
        "operator_cpu_s": cpu,
        "operator_rss_peak_sampled_mb": peak[0],
        "operator_rss_hwm_mb": hwm,
        "cpu_s": parts,
        "apiserver_requests": requests,
        "stages": {
            stage: sorted(moment - start for moment in moments.values()) for stage, moments in stages.items()
        },
    }
    print(f"{args.count} SlurmJobs applied in {applied:.1f} s; {len(done)} Succeeded, {len(failed)} Failed")
    for name, why in list(failed.items())[:3]:
        print(f"  failed {name}: {why}")
    print(
        f"all settled after {total:.1f} s: {figures['per_s']:.2f} SlurmJobs/s; apply -> Succeeded"
        f" p50 {figures['p50_s']:.1f} s, p95 {figures['p95_s']:.1f} s"
    )
    print(f"operator: {cpu:.1f} CPU s, peak RSS sampled {peak[0]:.0f} MB, VmHWM {hwm:.0f} MB")
    print_cpu("SlurmJobs", parts, args.count)
    if requests:
        print(
            f"kube-apiserver requests from the apply to the last settled ({sum(requests.values())}): "
            + ", ".join(f"{kind} {n}" for kind, n in requests.items())
        )
    print("when each stage was reached, s after the apply (first, 50%, 95%, last):")
    for stage, after in figures["stages"].items():
        marks = [quantile(after, q) for q in (0, 0.5, 0.95, 1)]
        print(f"  {stage:<22} {len(after):4d}: " + ", ".join(f"{m:6.1f}" for m in marks))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each ratio is their median")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for all to settle")
    parser.add_argument(
        "--plane", default="both", choices=("both", "real", "memory"), help="the control plane"
    )
    parser.add_argument(
        "--status-interval",
        type=float,
        default=0.0,
        help="the kubelet's --status-interval (0: its default), how soon it learns a job ended",
    )
    main_with_json(parser, measure)


if __name__ == "__main__":
    main()
