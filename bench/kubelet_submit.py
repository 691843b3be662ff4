"""Benchmark: pods bound -> job id annotated, against red-box-only submission of the same jobs.

N held jobs (``#SBATCH --hold``, so the shared Slurm does not run them) are submitted
(a) straight through red-box with the kubelet's concurrency, and (b) as N pods bound to a
virtual node: the time from creating the first pod to every pod carrying its job id
annotation. Prints both and their ratio (target <= 1.2x). Cancels every job it made.

    .venv/bin/python bench/kubelet_submit.py --pods 1000
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import replace

from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import names
from wlmvk.core.jobs import JobSpec
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import Settings
from wlmvk.wlm.client import RedBoxClient

SCRIPT = "#!/bin/sh\n#SBATCH --hold\ntrue\n"


async def red_box_only(stack: Stack, count: int, concurrency: int, prefix: str) -> float:
    client = RedBoxClient(stack.socket, timeout=60)
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            spec = JobSpec(
                script=SCRIPT,
                partition="debug",
                idempotency_key=str(uuid.uuid4()),
                name=f"{prefix}-rb-{index}",
            )
            await client.submit(spec)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


async def through_kubelet(stack: Stack, count: int, workers: int, prefix: str) -> float:
    settings = replace(
        Settings(),
        kubeconfig=str(stack.kubeconfig),
        red_box_socket=stack.socket,
        cluster_name="bench",
        listen_host="127.0.0.1",
        port=0,
        metrics_port=-1,
        status_interval=5.0,
        workers=workers,
        log_level="warning",
    )
    kubelet = Kubelet(settings)
    await kubelet.start()
    kube = await KubeClient.connect(str(stack.kubeconfig))
    node = names.node_name("bench", "debug")

    def pod(index: int) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{prefix}-{index}",
                "namespace": "default",
                "annotations": {names.ANNOTATION_BATCH: SCRIPT},
            },
            "spec": {"nodeName": node, "containers": [{"name": "job", "image": "none"}]},
        }

    gate = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with gate:
            await kube.create(PODS, pod(index), namespace="default")

    async def all_annotated() -> bool:
        listing = await kube.list(PODS, namespace="default")
        done = sum(
            1 for p in listing["items"] if names.ANNOTATION_JOB_ID in (p["metadata"].get("annotations") or {})
        )
        return done >= count

    start = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(count)))
    await wait_until(all_annotated, timeout=600, every=0.2)
    elapsed = time.perf_counter() - start
    await kube.close()
    await kubelet.close()
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    prefix = f"kb{uuid.uuid4().hex[:5]}"
    stack = Stack().start()
    try:
        baseline = await red_box_only(stack, args.pods, args.workers, prefix)
        scancel_name_prefix(prefix)
        kubelet = await through_kubelet(stack, args.pods, args.workers, prefix)
    finally:
        scancel_name_prefix(prefix)
        stack.close()
    print(f"pods: {args.pods}, concurrency: {args.workers}")
    print(f"red-box only submit:           {baseline:7.2f} s  ({args.pods / baseline:6.1f} jobs/s)")
    print(f"pod bound -> job id annotated: {kubelet:7.2f} s  ({args.pods / kubelet:6.1f} pods/s)")
    print(f"overhead ratio (kubelet / red-box only): {kubelet / baseline:.2f}x  (target <= 1.2x)")


if __name__ == "__main__":
    asyncio.run(main())
