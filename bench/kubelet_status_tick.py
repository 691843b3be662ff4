"""Benchmark: Slurm commands per status tick with N live (held) jobs.

N pods bound to a virtual node run held batch jobs (``#SBATCH --hold``: they stay PENDING and
use nothing). The kubelet then makes status ticks; shims on red-box's PATH count every Slurm
command red-box runs. The same is done against red-box with ``--original-api-only`` (the
kubelet falls back to one JobInfo per job, as the original provider polled). Prints commands
per tick and tick latency for both, and their ratio (target <= 2 commands per tick).

    .venv/bin/python bench/kubelet_status_tick.py --pods 1000
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import replace

from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import names
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import Settings

SCRIPT = "#!/bin/sh\n#SBATCH --hold\ntrue\n"


async def measure(original: bool, count: int, ticks: int, prefix: str) -> tuple[float, float]:
    stack = Stack().start(original=original)
    try:
        settings = replace(
            Settings(),
            kubeconfig=str(stack.kubeconfig),
            red_box_socket=stack.socket,
            cluster_name="bench",
            listen_host="127.0.0.1",
            port=0,
            metrics_port=-1,
            status_interval=3600,
            workers=16,
            wlm_timeout=120,
        )
        kubelet = Kubelet(settings)
        await kubelet.start()
        kube = await KubeClient.connect(str(stack.kubeconfig))
        node = names.node_name("bench", "debug")
        gate = asyncio.Semaphore(32)

        async def create(index: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{prefix}-{index}", "annotations": {names.ANNOTATION_BATCH: SCRIPT}},
                "spec": {"nodeName": node, "containers": [{"name": "job", "image": "none"}]},
            }
            async with gate:
                await kube.create(PODS, body, namespace="default")

        await asyncio.gather(*(create(i) for i in range(count)))

        async def all_live() -> bool:
            assert kubelet.pods is not None
            return sum(1 for r in kubelet.pods.records() if r.job_id is not None) >= count

        await wait_until(all_live, timeout=900, every=0.2)
        assert kubelet.pods is not None
        await kubelet.pods.tick()  # the first tick writes every pod's Pending status
        await asyncio.sleep(2)
        before = len(stack.slurm_commands())
        start = time.perf_counter()
        for _ in range(ticks):
            await kubelet.pods.tick()
        elapsed = (time.perf_counter() - start) / ticks
        per_tick = (len(stack.slurm_commands()) - before) / ticks
        await kube.close()
        await kubelet.close()
        return per_tick, elapsed
    finally:
        scancel_name_prefix(prefix)
        stack.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=5)
    args = parser.parse_args()
    prefix = f"kt{uuid.uuid4().hex[:5]}"
    ours, ours_time = await measure(False, args.pods, args.ticks, prefix)
    original, original_time = await measure(True, args.pods, 1, prefix + "o")
    print(f"live held jobs: {args.pods}")
    print(
        f"wlmvk red-box (batched JobStates): {ours:7.1f} Slurm commands/tick, {ours_time * 1000:8.1f} ms/tick"
    )
    print(
        f"original API (JobInfo per job):    {original:7.1f} Slurm commands/tick,"
        f" {original_time * 1000:8.1f} ms/tick"
    )
    print(
        f"ratio original/wlmvk: {original / max(ours, 1e-9):.0f}x commands,"
        f" {original_time / ours_time:.0f}x time"
    )
    print(f"target <= 2 commands per tick: {'met' if ours <= 2 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
