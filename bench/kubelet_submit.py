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

from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.core.jobs import JobSpec
from wlmvk.kube.bodies import NODES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch
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
    """The kubelet runs as its own process (as deployed); this one creates pods and watches them."""
    kubelet = stack.kubelet(cluster="bench", submissions=workers)
    kube = await KubeClient.connect(str(stack.kubeconfig))
    node = names.node_name("bench", "debug")

    async def node_exists() -> bool:
        try:
            await kube.get(NODES, node)
        except NotFound:
            return False
        return True

    await wait_until(node_exists, timeout=60, every=0.2)

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

    annotated: set[str] = set()
    done = asyncio.Event()

    async def watcher() -> None:
        async for event in watch(kube, PODS, WatchOptions(namespace="default")):
            items = event.items if isinstance(event, Listed) else [event.object]
            for item in items:
                if names.ANNOTATION_JOB_ID in (item["metadata"].get("annotations") or {}):
                    annotated.add(item["metadata"]["name"])
            if len(annotated) >= count:
                done.set()

    watching = asyncio.create_task(watcher())
    await asyncio.sleep(0.5)
    gate = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with gate:
            await kube.create(PODS, pod(index), namespace="default")

    cpu_before = stack.cpu_seconds()
    start = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(count)))
    created = time.perf_counter() - start
    await asyncio.wait_for(done.wait(), 900)
    elapsed = time.perf_counter() - start
    cpu = {name: used - cpu_before.get(name, 0.0) for name, used in stack.cpu_seconds().items()}
    print(f"all {count} pods created after {created:.2f} s")
    print("CPU seconds during the kubelet run: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
    watching.cancel()
    await kube.close()
    kubelet.terminate()
    kubelet.wait(15)
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    prefix = f"kb{uuid.uuid4().hex[:5]}"
    stack = Stack().start()
    try:
        # The shared Slurm's load drifts: measure red-box alone before and after, and use the mean.
        before = await red_box_only(stack, args.pods, args.workers, prefix)
        scancel_name_prefix(prefix)
        kubelet = await through_kubelet(stack, args.pods, args.workers, prefix)
        scancel_name_prefix(prefix)
        after = await red_box_only(stack, args.pods, args.workers, prefix + "a")
        baseline = (before + after) / 2
    finally:
        scancel_name_prefix(prefix)
        stack.close()
    print(f"pods: {args.pods}, concurrency: {args.workers}")
    print(
        f"red-box only submit:           {baseline:7.2f} s"
        f"  (mean of {before:.2f} s before and {after:.2f} s after)"
    )
    print(f"pod bound -> job id annotated: {kubelet:7.2f} s  ({args.pods / kubelet:6.1f} pods/s)")
    print(f"overhead ratio (kubelet / red-box only): {kubelet / baseline:.2f}x  (target <= 1.2x)")


if __name__ == "__main__":
    asyncio.run(main())
