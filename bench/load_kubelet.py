"""Load: one kubelet holding N pods over 4 partition nodes, all of them held/pending jobs.

Per steady status tick it reports the kubelet's CPU seconds, the Slurm commands red-box ran,
the backend calls the kubelet made and the API server requests it sent (every aiohttp request
of this process is counted: the kubelet runs in-process, the API server is a subprocess), and
the kubelet's RSS once it holds every pod. The first tick writes every pod's Pending status;
steady ticks must write nothing (no per-pod polling, no per-pod API traffic).

Two backends:
- default: the in-memory HeldBackend of bench/kubelet_rss.py (every job PENDING, JobHeldUser),
  so that neither the shared Slurm (MaxJobCount 50,000 in dev/scripts/slurm-local, shared with other
  work) nor red-box is the limit: 10,000 pods;
- ``--real``: real red-box and Slurm, every pod a ``#SBATCH --hold`` job on the partitions
  debug/long/gpu/unlimited (cancelled at the end); Slurm commands counted by PATH shims.

    .venv/bin/python bench/load_kubelet.py --pods 10000
    .venv/bin/python bench/load_kubelet.py --real --pods 1000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import uuid
from dataclasses import replace
from typing import Any

import aiohttp
from kubelet_rss import HeldBackend, rss_mb
from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import logging as wlog
from wlmvk.core import names
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import Settings

REAL_PARTITIONS = ("debug", "long", "gpu", "unlimited")
STUB_PARTITIONS = ("p1", "p2", "p3", "p4")
HELD = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=10M\ntrue\n"

requests_sent = 0


def _count_requests() -> None:
    """Count every HTTP request this process sends (the kubelet's API server traffic)."""
    original = aiohttp.ClientSession._request

    async def counted(self: aiohttp.ClientSession, *args: Any, **kwargs: Any) -> Any:
        global requests_sent
        requests_sent += 1
        return await original(self, *args, **kwargs)

    aiohttp.ClientSession._request = counted  # type: ignore[method-assign]


class CountingBackend(HeldBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def states(self, job_ids: Any) -> Any:
        self.calls += 1
        return await super().states(job_ids)

    async def info(self) -> Any:
        self.calls += 1
        return await super().info()


async def run(args: argparse.Namespace) -> dict[str, float]:
    _count_requests()
    stack = Stack().start()
    prefix = f"ld{uuid.uuid4().hex[:5]}"
    partitions = REAL_PARTITIONS if args.real else STUB_PARTITIONS
    backend = None if args.real else CountingBackend()
    try:
        kube = await KubeClient.connect(str(stack.kubeconfig))
        gc.collect()
        before = rss_mb()
        settings = replace(
            Settings(), kubeconfig=str(stack.kubeconfig), red_box_socket=stack.socket,
            cluster_name="load", listen_host="127.0.0.1", port=0, metrics_port=-1,
            status_interval=3600, workers=16, wlm_timeout=120,
        )  # fmt: skip
        kubelet = Kubelet(settings, backend=backend)
        await kubelet.start()
        gate = asyncio.Semaphore(32)

        async def create(index: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{prefix}-{index}", "annotations": {names.ANNOTATION_BATCH: HELD}},
                "spec": {
                    "nodeName": names.node_name("load", partitions[index % len(partitions)]),
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            }
            async with gate:
                await kube.create(PODS, body, namespace="default")

        t0 = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(args.pods)))

        async def all_live() -> bool:
            assert kubelet.pods is not None
            live = sum(1 for r in kubelet.pods.records() if r.job_id is not None)
            return bool(live >= args.pods)

        await wait_until(all_live, timeout=3600, every=1.0)
        taken_in = time.perf_counter() - t0
        assert kubelet.pods is not None
        sent, cpu = requests_sent, time.process_time()
        await kubelet.pods.tick()  # writes every pod's Pending status
        first_requests, first_cpu = requests_sent - sent, time.process_time() - cpu
        await asyncio.sleep(2)
        gc.collect()
        holding = rss_mb()
        commands = len(stack.slurm_commands())
        calls = backend.calls if backend else 0
        sent, cpu, wall = requests_sent, time.process_time(), time.perf_counter()
        for _ in range(args.ticks):
            await kubelet.pods.tick()
        ticks = args.ticks
        result = {
            "pods": args.pods,
            "taken in (s)": taken_in,
            "RSS before kubelet (MB)": before,
            "RSS holding pods (MB)": holding,
            "first tick: API requests": first_requests,
            "first tick: CPU s": first_cpu,
            "steady tick: CPU s": (time.process_time() - cpu) / ticks,
            "steady tick: wall s": (time.perf_counter() - wall) / ticks,
            "steady tick: API requests": (requests_sent - sent) / ticks,
            "steady tick: Slurm commands": (len(stack.slurm_commands()) - commands) / ticks,
            "steady tick: backend calls": ((backend.calls - calls) / ticks) if backend else float("nan"),
        }
        await kubelet.close()
        await kube.close()
        return result
    finally:
        if args.real:
            scancel_name_prefix(prefix)
        stack.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="real red-box and Slurm (held jobs)")
    args = parser.parse_args()
    wlog.configure("warning")
    result = asyncio.run(run(args))
    print(f"backend: {'real red-box + Slurm, held jobs' if args.real else 'in-memory held backend'}")
    print("| measure | value | target |")
    print("|---|---|---|")
    targets = {
        "RSS holding pods (MB)": "<= 250",
        "steady tick: CPU s": "<= 0.5",
        "steady tick: Slurm commands": "<= 2",
        "steady tick: API requests": "no per-pod requests",
    }
    for key, value in result.items():
        print(f"| {key} | {value:.2f} | {targets.get(key, '')} |")


if __name__ == "__main__":
    main()
