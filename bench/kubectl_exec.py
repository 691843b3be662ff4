"""Benchmark: ``kubectl exec`` round trips into a running Slurm job, and what srun alone costs.

One pod runs a real Slurm job (``sleep``); red-box runs as the benchmarks' own
Slurm user; the in-memory API server passes kubectl's WebSocket through to the
kubelet (the kubectl built by dev/scripts/kube-local when there is one). Three arms,
interleaved round by round, all measured in this run:

- ``exec``: ``kubectl exec <pod> -- true``, a whole command: kubectl's start,
  the upgrade through the API server and the kubelet, red-box, ``srun --overlap``;
- ``srun``: ``srun --overlap --jobid=<job> -- true`` run directly as the job owner,
  the floor every exec pays (its ratio: what the whole path adds);
- ``echo``: one line through an open ``kubectl exec -i <pod> -- cat`` session and
  back, the interactive latency a user feels per keystroke-line.

Prints p50/p95 of each and the ratios exec/srun; ``--json`` writes the figures.

    .venv/bin/python bench/kubectl_exec.py --rounds 5 --execs 10 --lines 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubelet_stack import wait_for_node, wait_until
from slurm_side import ROOT, USER, BenchRedBox, Processes, apiserver_and_kubelet

from wlmvk.core import names
from wlmvk.kube.bodies import NAMESPACES, PODS
from wlmvk.kube.client import KubeClient

PARTITION = "long"


def kubectl() -> str:
    built = subprocess.run(
        [str(ROOT / "dev" / "scripts" / "kube-local"), "bin"], capture_output=True, text=True
    )
    path = Path(built.stdout.strip()) / "kubectl"
    return str(path) if built.returncode == 0 and path.is_file() else shutil.which("kubectl") or "kubectl"


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


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    red_box = BenchRedBox().start()
    procs = Processes(red_box.base)
    kubeconfig, cluster, _ = await apiserver_and_kubelet(red_box, procs, "ex")
    kube = await KubeClient.connect(str(kubeconfig))
    binary = kubectl()
    kube_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    kube_env.update(KUBECONFIG=str(kubeconfig), HOME=str(red_box.base))
    arms: dict[str, list[float]] = {"exec": [], "srun": [], "echo": []}
    job = ""
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

        print("waiting for the sleeper's job to run", flush=True)
        job = await wait_until(running, timeout=900, every=0.5)
        print(f"job {job} runs", flush=True)
        exec_argv = [binary, "-n", cluster, "exec", "sleeper", "--"]
        srun_argv = ["runuser", "-u", USER, "--", "srun", "--overlap", f"--jobid={job}", "--quiet", "--"]
        for _ in range(args.rounds):
            for _ in range(args.execs):
                arms["exec"].append(await asyncio.to_thread(timed, [*exec_argv, "true"], kube_env))
                arms["srun"].append(await asyncio.to_thread(timed, [*srun_argv, "true"]))
            cat = [binary, "-n", cluster, "exec", "-i", "sleeper", "--", "cat"]
            arms["echo"] += await echo_round_trips(cat, kube_env, args.lines)
    finally:
        await kube.close()
        procs.close()
        red_box.stop()
        if job:
            # Only this job: other benchmarks may be running as the same Slurm user.
            await asyncio.to_thread(subprocess.run, ["scancel", job], capture_output=True, check=False)
    figures: dict[str, Any] = {
        "rounds": args.rounds,
        "execs": args.rounds * args.execs,
        "lines": len(arms["echo"]),
        "kubectl": binary,
    }
    for arm, values in arms.items():
        figures[arm] = {"p50_s": statistics.median(values), "p95_s": quantile(values, 0.95), "n": len(values)}
    figures["exec_x_srun_p50"] = figures["exec"]["p50_s"] / figures["srun"]["p50_s"]
    figures["exec_x_srun_p95"] = figures["exec"]["p95_s"] / figures["srun"]["p95_s"]
    print(f"kubectl: {binary}; {args.rounds} rounds")
    for arm, what in (
        ("exec", "kubectl exec -- true"),
        ("srun", "srun --overlap -- true (the job owner, no Kubernetes)"),
        ("echo", "a line through an open kubectl exec -i -- cat and back"),
    ):
        f = figures[arm]
        print(f"{what}: n={f['n']} p50 {f['p50_s'] * 1000:.0f} ms, p95 {f['p95_s'] * 1000:.0f} ms")
    print(
        f"kubectl exec / srun alone: p50 {figures['exec_x_srun_p50']:.2f}x,"
        f" p95 {figures['exec_x_srun_p95']:.2f}x"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--execs", type=int, default=10, help="kubectl exec and srun calls per round")
    parser.add_argument("--lines", type=int, default=100, help="echo round trips per round")
    parser.add_argument("--json", default="", help="write the figures to this file")
    args = parser.parse_args()
    # A benchmark stopped from outside still stops what it started (the finally above).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    figures = asyncio.run(measure(args))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
