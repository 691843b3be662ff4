"""kill -9 of the kubelet in the middle of submitting 50 pods: after a restart every pod
has exactly one Slurm job, counted by Slurm itself (squeue and sacct, by job name)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from tests.e2e.kubelet.helpers import eventually, job_pod, slurm_jobs_named, unique
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import KubeletProcess
from tests.fixtures.redbox import RedBox
from wlmvk.core import names
from wlmvk.kube.bodies import NODES, PODS
from wlmvk.kube.client import KubeClient

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

PODS_COUNT = 50


async def test_kill_9_while_submitting_then_restart_gives_exactly_one_job_per_pod(
    slurm: str,
    apiserver: RunningApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_process_factory: Callable[..., Awaitable[KubeletProcess]],
) -> None:
    box = redbox_factory()
    kube = await KubeClient.connect(str(apiserver.kubeconfig))
    try:
        # One worker: submissions are sequential, so the kill lands in the middle of them.
        first = await kubelet_process_factory(
            kubeconfig=apiserver.kubeconfig, red_box_socket=box.socket, status_interval=1, workers=1
        )

        async def node_ready() -> bool:
            node = await kube.get(NODES, "slurm-test-debug")
            return {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"

        await eventually(node_ready, timeout=60)
        prefix = unique("k9")
        pod_names = [f"{prefix}-{index:02d}" for index in range(PODS_COUNT)]
        await asyncio.gather(
            *(
                kube.create(PODS, job_pod(name, "true", resources={"requests": {}}), namespace="default")
                for name in pod_names
            )
        )

        async def annotated_count() -> int:
            listing = await kube.list(PODS, namespace="default")
            return sum(
                1
                for pod in listing["items"]
                if pod["metadata"]["name"].startswith(prefix)
                and names.ANNOTATION_JOB_ID in (pod["metadata"].get("annotations") or {})
            )

        async def some_submitted() -> bool:
            return await annotated_count() >= 3

        await eventually(some_submitted, timeout=60, every=0.02)
        first.kill()
        await first.process.wait()
        assert await annotated_count() < PODS_COUNT, "the kill came too late to test anything"

        second = await kubelet_process_factory(
            kubeconfig=apiserver.kubeconfig, red_box_socket=box.socket, status_interval=1, workers=4
        )

        async def all_annotated() -> bool:
            return await annotated_count() == PODS_COUNT

        await eventually(all_annotated, timeout=120)

        async def all_in_slurm() -> dict[str, set[str]]:
            found = slurm_jobs_named(prefix)
            return found if set(found) == set(pod_names) else {}

        found = await eventually(all_in_slurm, timeout=60, every=1)
        await asyncio.sleep(3)  # late sacct rows would show a duplicate here
        found = slurm_jobs_named(prefix)
        duplicates = {name: ids for name, ids in found.items() if len(ids) != 1}
        assert duplicates == {}
        listing = await kube.list(PODS, namespace="default")
        annotated = {
            pod["metadata"]["name"]: pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
            for pod in listing["items"]
            if pod["metadata"]["name"].startswith(prefix)
        }
        assert annotated == {name: next(iter(ids)) for name, ids in found.items()}
        await second.stop()
    finally:
        await kube.close()
