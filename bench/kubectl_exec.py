"""Benchmark: ``kubectl exec`` round trips into a running Slurm job, and what srun alone costs.

One pod runs a real Slurm job (``sleep``); red-box runs as the benchmarks' own
Slurm user; the kubectl built by dev/scripts/kube-local (when there is one) reaches the
kubelet through ``--plane``'s API server: ``real`` (kube-apiserver of dev/scripts/kube-local,
which ends kubectl's WebSocket and speaks SPDY to our kubelet), ``memory`` (the in-memory API
server, which passes the WebSocket through) or ``both`` (the default; real first). The arms,
interleaved round by round, all measured in this run:

- ``exec``: ``kubectl exec <pod> -- true``, a whole command: kubectl's start,
  the upgrade through the API server and the kubelet, red-box, ``srun --overlap``;
- ``srun``: ``srun --overlap --jobid=<job> -- true`` run directly as the job owner,
  the floor every exec pays (its ratio: what the whole path adds);
- ``echo``: one line through an open ``kubectl exec -i <pod> -- cat`` session and
  back, the interactive latency a user feels per keystroke-line;
- ``kubectl``: ``kubectl version --client``, the kubectl process's own start, which
  every ``exec`` pays before it reaches any server: ``exec`` less its p50 is wlmvk's
  part, whose ratio to ``srun`` is the goal's figure (<= 1.5x).

Prints p50/p95 of each and the ratios exec/srun; ``--json`` writes the figures (each
plane's ``exec``/``echo`` under ``planes``, the first plane's also at the top level).

    .venv/bin/python bench/kubectl_exec.py --rounds 5 --execs 10 --lines 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from apiserver_requests import kubectl
from kubelet_stack import RealPlane, forget_cluster, wait_for_node, wait_until
from quantiles import quantile
from slurm_side import USER, BenchRedBox, Processes, apiserver_and_kubelet

from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import NAMESPACES, NODES, PODS
from wlmvk.kube.client import KubeClient

PARTITION = "long"


def sleeper(namespace: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "sleeper",
            "namespace": namespace,
            "annotations": {names.ANNOTATION_BATCH: "#!/bin/sh\n#SBATCH --time=30\nsleep 1800\n"},
        },
        "spec": {"nodeName": node, "containers": [{"name": "job", "image": "none"}]},
    }


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
    return took


async def echo_round_trips(argv: list[str], env: dict[str, str], lines: int) -> list[float]:
    """Write a line into ``kubectl exec -i ... -- cat`` and wait for it back, ``lines`` times."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    took: list[float] = []
    try:
        proc.stdin.write(b"warm-up\n")
        await proc.stdin.drain()
        await asyncio.wait_for(proc.stdout.readline(), 60)  # the session is up
        for index in range(lines):
            line = f"line {index}\n".encode()
            start = time.perf_counter()
            proc.stdin.write(line)
            await proc.stdin.drain()
            back = await asyncio.wait_for(proc.stdout.readline(), 30)
            took.append(time.perf_counter() - start)
            if back != line:
                raise SystemExit(f"cat answered {back!r} to {line!r}")
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
    return took


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_s": statistics.median(values), "p95_s": quantile(values, 0.95), "n": len(values)}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    planes = ["real", "memory"] if args.plane == "both" else [args.plane]
    real = RealPlane.up() if "real" in planes else None
    # Slurm's commands not counted: a counting shim is one more shell before every srun.
    red_box = BenchRedBox(count_commands=False).start()
    procs = Processes(red_box.base)
    binary = kubectl()
    arms: dict[str, list[float]] = {"srun": [], "kubectl": []}
    by_plane: dict[str, dict[str, list[float]]] = {plane: {"exec": [], "echo": []} for plane in planes}
    jobs: list[str] = []
    sessions: list[tuple[str, dict[str, str], str]] = []
    declared: dict[str, list[str]] = {}
    try:
        for plane in planes:
            namespace, env, job, declared[plane] = await sleeping_pod(
                red_box, procs, real if plane == "real" else None
            )
            sessions.append((namespace, env, job))
            jobs.append(sessions[-1][2])
        srun_argv = ["runuser", "-u", USER, "--", "srun", "--overlap", f"--jobid={jobs[0]}", "--quiet", "--"]
        for _ in range(args.rounds):
            for _ in range(args.execs):
                arms["srun"].append(await asyncio.to_thread(timed, [*srun_argv, "true"]))
                arms["kubectl"].append(await asyncio.to_thread(timed, [binary, "version", "--client"]))
                for plane, (namespace, env, _) in zip(planes, sessions, strict=True):
                    exec_argv = [binary, "-n", namespace, "exec", "sleeper", "--", "true"]
                    by_plane[plane]["exec"].append(await asyncio.to_thread(timed, exec_argv, env))
            for plane, (namespace, env, _) in zip(planes, sessions, strict=True):
                cat = [binary, "-n", namespace, "exec", "-i", "sleeper", "--", "cat"]
                by_plane[plane]["echo"] += await echo_round_trips(cat, env, args.lines)
    finally:
        procs.close()
        red_box.stop()
        # Only these jobs: other benchmarks may be running as the same Slurm user.
        for job in jobs:
            await asyncio.to_thread(subprocess.run, ["scancel", job], capture_output=True, check=False)
        if real is not None:
            await forget_clusters(real, [namespace for namespace, _, _ in sessions])
    figures: dict[str, Any] = {
        "rounds": args.rounds,
        "execs": args.rounds * args.execs,
        "kubectl": binary,
        "srun": summary(arms["srun"]),
        "kubectl_start": summary(arms["kubectl"]),
        "planes": {},
    }
    srun, start = figures["srun"], figures["kubectl_start"]
    print(f"kubectl: {binary}; {args.rounds} rounds")
    print(f"srun --overlap -- true (the job owner, no Kubernetes): p50 {srun['p50_s'] * 1000:.0f} ms,"
          f" p95 {srun['p95_s'] * 1000:.0f} ms")  # fmt: skip
    print(f"kubectl version --client (kubectl's own start): p50 {start['p50_s'] * 1000:.0f} ms")
    for plane in planes:
        f: dict[str, Any] = {arm: summary(values) for arm, values in by_plane[plane].items()}
        f["lines"] = {"n": len(by_plane[plane]["echo"])}
        # What the pod's Node declared: with ExtendWebSocketsToKubelet, kube-apiserver passes the
        # WebSocket through to the kubelet; else it translates it to SPDY (docs/exec-and-top.md).
        f["declared"] = declared[plane]
        f["exec_x_srun_p50"] = f["exec"]["p50_s"] / srun["p50_s"]
        f["exec_x_srun_p95"] = f["exec"]["p95_s"] / srun["p95_s"]
        # The goal's figure: what exec adds besides kubectl's own start, against srun alone.
        f["wlmvk_x_srun_p50"] = (f["exec"]["p50_s"] - start["p50_s"]) / srun["p50_s"]
        figures["planes"][plane] = f
        print(
            f"{plane}: kubectl exec -- true p50 {f['exec']['p50_s'] * 1000:.0f} ms, p95"
            f" {f['exec']['p95_s'] * 1000:.0f} ms; a line through exec -i cat p50"
            f" {f['echo']['p50_s'] * 1000:.0f} ms; exec / srun p50 {f['exec_x_srun_p50']:.2f}x,"
            f" (exec - kubectl's start) / srun p50 {f['wlmvk_x_srun_p50']:.2f}x (goal <= 1.5x)"
        )
    first = figures["planes"][planes[0]]
    return (
        figures
        | {key: first[key] for key in ("exec", "echo", "exec_x_srun_p50", "exec_x_srun_p95")}
        | {
            "lines": first["lines"]["n"],
            "plane": planes[0],
        }
    )


async def sleeping_pod(
    red_box: BenchRedBox, procs: Processes, real: RealPlane | None, *kubelet_args: str
) -> tuple[str, dict[str, str], str, list[str]]:
    """A kubelet on the plane (``real``, else a new in-memory one) and its pod's running job:
    the pod's namespace, kubectl's environment for the plane, the job id, and what the pod's
    Node declares (``status.declaredFeatures``)."""
    kubeconfig, cluster, _ = await apiserver_and_kubelet(red_box, procs, "ex", *kubelet_args, real=real)
    kube = await KubeClient.connect(str(kubeconfig))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(kubeconfig), HOME=str(red_box.base))
    try:
        # Not debug, where the tests queue their jobs: the sleeper should start at once.
        node = names.node_name(cluster, PARTITION)
        await wait_for_node(kube, node)
        await kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster}}
        )
        await kube.create(PODS, sleeper(cluster, node), namespace=cluster)

        async def running() -> str:
            pod = await kube.get(PODS, "sleeper", namespace=cluster)
            if (pod.get("status") or {}).get("phase") != "Running":
                return ""
            return str(pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID])

        print(f"waiting for the sleeper's job to run ({'real' if real else 'memory'} plane)", flush=True)
        job: str = await wait_until(running, timeout=900, every=0.5)
        declared = list((await kube.get(NODES, node))["status"].get("declaredFeatures") or [])
        print(f"job {job} runs; its Node declares {declared}", flush=True)
    finally:
        await kube.close()
    return cluster, env, job, declared


async def forget_clusters(real: RealPlane, clusters: list[str]) -> None:
    """The real plane outlives the run: the benchmark's nodes and namespaces go."""
    kube = await KubeClient.connect(str(real.kubeconfig))
    try:
        for cluster in clusters:
            await forget_cluster(kube, cluster)
            with contextlib.suppress(NotFound):
                await kube.delete(NAMESPACES, cluster)
    finally:
        await kube.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--execs", type=int, default=10, help="kubectl exec and srun calls per round")
    parser.add_argument("--lines", type=int, default=100, help="echo round trips per round")
    parser.add_argument(
        "--plane", default="both", choices=("both", "real", "memory"), help="the control plane"
    )
    parser.add_argument("--json", default="", help="write the figures to this file")
    args = parser.parse_args()
    # A benchmark stopped from outside still stops what it started (the finally above).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    figures = asyncio.run(measure(args))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
