"""Benchmark: resident memory of the kubelet holding N pods on 4 nodes.

The pods' jobs stay PENDING in a stub backend (an in-memory red-box stand-in, so that neither
the shared Slurm, whose MaxJobCount is 50,000 in dev/scripts/slurm-local but which other work
uses at the same time, nor red-box is the limit). The kubelet runs
in this process against the in-memory API server (a subprocess); RSS is read from /proc
before the kubelet starts and once it tracks every pod (all annotated, Pending status
written). Prints both and the ratio to the 250 MB target.

    .venv/bin/python bench/kubelet_rss.py --pods 10000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from kubelet_stack import Stack, wait_until

from wlmvk.core import names
from wlmvk.core.errors import Unsupported
from wlmvk.core.jobs import (
    ContainerJobSpec,
    JobId,
    JobSpec,
    JobState,
    JobStatus,
    PartitionResources,
    WorkloadInfo,
)
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import Settings

PARTITIONS = ("p1", "p2", "p3", "p4")


class HeldBackend:
    """Every job stays PENDING (JobHeldUser), as a held Slurm job would."""

    def __init__(self) -> None:
        self.jobs: dict[JobId, JobState] = {}
        self.keys: dict[str, JobId] = {}

    async def info(self) -> WorkloadInfo:
        return WorkloadInfo("slurm", "22.05.8", 0)

    async def partitions(self) -> list[str]:
        return list(PARTITIONS)

    async def resources(self, partition: str) -> PartitionResources:
        return PartitionResources(partition, 100, 64, 256000, 86400)

    async def submit(self, spec: JobSpec) -> JobId:
        if spec.idempotency_key in self.keys:
            return self.keys[spec.idempotency_key]
        job_id = JobId(len(self.jobs) + 1)
        self.jobs[job_id] = JobState(
            job_id, JobStatus.PENDING, reason="JobHeldUser", submit_time=datetime.now(UTC),
            std_out=f"/jobs/slurm-{job_id}.out", partition=spec.partition,
            idempotency_key=spec.idempotency_key,
        )  # fmt: skip
        self.keys[spec.idempotency_key] = job_id
        return job_id

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        raise Unsupported("stub")

    async def find(self, idempotency_key: str) -> JobState | None:
        job_id = self.keys.get(idempotency_key)
        return self.jobs[job_id] if job_id else None

    async def states(self, job_ids: Sequence[JobId]) -> Mapping[JobId, JobState]:
        return {j: self.jobs[j] for j in job_ids if j in self.jobs}

    async def cancel(self, job_id: JobId) -> None:
        return None

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        raise Unsupported("stub")

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        raise Unsupported("stub")

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        raise Unsupported("stub")

    def stage_out(self, path: str) -> AsyncIterator[bytes]:
        raise Unsupported("stub")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    stack = Stack().start()
    try:
        kube = await KubeClient.connect(str(stack.kubeconfig))
        gc.collect()
        before = rss_mb()
        settings = replace(
            Settings(),
            kubeconfig=str(stack.kubeconfig),
            cluster_name="rss",
            listen_host="127.0.0.1",
            port=0,
            metrics_port=-1,
            status_interval=5.0,
            workers=16,
        )
        backend = HeldBackend()
        kubelet = Kubelet(settings, backend=backend)
        await kubelet.start()
        started = rss_mb()
        gate = asyncio.Semaphore(32)
        t0 = time.perf_counter()

        async def create(index: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"rss-{index}", "labels": {"app": "rss"}},
                "spec": {
                    "nodeName": names.node_name("rss", PARTITIONS[index % 4]),
                    "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}],
                },
            }
            async with gate:
                await kube.create(PODS, body, namespace="default")

        await asyncio.gather(*(create(i) for i in range(args.pods)))

        async def all_pending_written() -> bool:
            assert kubelet.pods is not None
            records = kubelet.pods.records()
            return sum(1 for r in records if r.written_state is not None) >= args.pods

        await wait_until(all_pending_written, timeout=1800, every=1.0)
        elapsed = time.perf_counter() - t0
        gc.collect()
        holding = rss_mb()
        await kubelet.close()
        await kube.close()
    finally:
        stack.close()
    print(
        f"pods: {args.pods} on {len(PARTITIONS)} nodes"
        f" (taken in, submitted, Pending written in {elapsed:.0f} s)"
    )
    print(
        f"RSS: process before kubelet {before:.0f} MB, kubelet started {started:.0f} MB,"
        f" holding pods {holding:.0f} MB"
    )
    print(f"RSS / 250 MB target: {holding / 250:.2f}x ({'met' if holding <= 250 else 'NOT met'})")


if __name__ == "__main__":
    asyncio.run(main())
