"""Benchmark: pods bound -> job id annotated, against red-box-only submission of the same jobs.

N held jobs (``#SBATCH --hold``, so the shared Slurm does not run them) are submitted
(a) straight through red-box with the kubelet's concurrency, and (b) as N pods bound to a
virtual node: the time from creating the first pod to every pod carrying its job id
annotation. Rounds interleave (a) and (b); prints each round's ratio and their median
(target <= 1.2x). Cancels every job it made.

    .venv/bin/python bench/kubelet_submit.py --pods 1000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Any

from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.core.jobs import JobSpec
from wlmvk.kube.bodies import NAMESPACES, NODES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Listed, WatchOptions, watch
from wlmvk.kubelet.settings import Settings as KubeletSettings
from wlmvk.kubelet.translate import Target, pod_to_job
from wlmvk.wlm.client import RedBoxClient

SCRIPT = "#!/bin/sh\n#SBATCH --hold\ntrue\n"


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


async def through_kubelet(stack: Stack, count: int, workers: int, prefix: str) -> float:
    """The kubelet runs as its own process (as deployed); this one creates pods and watches them."""
    # Each round has its own node and namespace: the pods of earlier rounds stay out of the way.
    kubelet = stack.kubelet(cluster=prefix, submissions=workers)
    kube = await KubeClient.connect(str(stack.kubeconfig))
    node = names.node_name(prefix, "debug")

    async def node_exists() -> bool:
        try:
            await kube.get(NODES, node)
        except NotFound:
            return False
        return True

    await wait_until(node_exists, timeout=60, every=0.2)
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
                has_id = names.ANNOTATION_JOB_ID in (item["metadata"].get("annotations") or {})
                if has_id and name not in annotated:
                    annotated.add(name)
                    moments.append(time.perf_counter())
            if len(annotated) >= count:
                done.set()

    watching = asyncio.create_task(watcher())
    await asyncio.sleep(0.5)
    gate = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with gate:
            await kube.create(PODS, pod(prefix, index, node), namespace=prefix)

    cpu_before = stack.cpu_seconds()
    start = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(count)))
    created = time.perf_counter() - start
    await asyncio.wait_for(done.wait(), 900)
    elapsed = time.perf_counter() - start
    cpu = {name: used - cpu_before.get(name, 0.0) for name, used in stack.cpu_seconds().items()}
    print(f"all {count} pods created after {created:.2f} s")
    marks = [moments[int(q * (len(moments) - 1))] - start for q in (0, 0.25, 0.5, 0.75, 1)]
    print("annotated at (first, 25%, 50%, 75%, last): " + ", ".join(f"{m:.2f}" for m in marks) + " s")
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
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the figure is their median")
    args = parser.parse_args()
    stack = Stack().start()
    ratios: list[float] = []
    try:
        # The shared Slurm's load drifts: every round measures red-box alone before and after
        # the kubelet and compares with their mean; the rounds' median is the figure.
        for round_ in range(1, args.rounds + 1):
            prefix = f"kb{uuid.uuid4().hex[:5]}"
            try:
                before = await red_box_only(stack, args.pods, args.workers, prefix)
                scancel_name_prefix(prefix)
                kubelet = await through_kubelet(stack, args.pods, args.workers, prefix)
                scancel_name_prefix(prefix)
                after = await red_box_only(stack, args.pods, args.workers, prefix + "a")
            finally:
                scancel_name_prefix(prefix)
            baseline = (before + after) / 2
            ratios.append(kubelet / baseline)
            print(
                f"round {round_}: red-box only {baseline:6.2f} s (before {before:.2f}, after {after:.2f}),"
                f" pod bound -> job id annotated {kubelet:6.2f} s ({args.pods / kubelet:5.1f} pods/s),"
                f" ratio {kubelet / baseline:.2f}x",
                flush=True,
            )
    finally:
        stack.close()
    print(f"pods: {args.pods}, concurrency: {args.workers}, rounds: {len(ratios)}")
    print("ratios: " + ", ".join(f"{ratio:.2f}x" for ratio in ratios))
    median = statistics.median(ratios)
    print(f"overhead ratio (kubelet / red-box only), median: {median:.2f}x  (target <= 1.2x)")


if __name__ == "__main__":
    asyncio.run(main())
