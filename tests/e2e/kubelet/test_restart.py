"""kill -9 of the kubelet in the middle of submitting 50 pods: after a restart every pod
has exactly one Slurm job, counted by Slurm itself (squeue and sacct, by job name)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.kubelet.helpers import eventually, job_pod, slurm_jobs_named, unique
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import KubeletProcess
from tests.fixtures.processes import running
from tests.fixtures.redbox import RedBox
from wlmvk.core import names
from wlmvk.kube.bodies import NODES, PODS
from wlmvk.kube.client import KubeClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases, pytest.mark.slow]

PODS_COUNT = 50


def submitting_at_kill(log: Path) -> set[str]:
    """Pods the (killed) kubelet had started but not finished submitting, from its debug log."""
    started: set[str] = set()
    finished: set[str] = set()
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        pod = str(entry.get("pod", "")).rpartition("/")[2]
        if entry.get("event") == "submitting":
            started.add(pod)
        elif entry.get("event") == "submitted":
            finished.add(pod)
    return started - finished


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
            kubeconfig=apiserver.kubeconfig,
            red_box_socket=box.socket,
            status_interval=1,
            workers=1,
            log_level="debug",
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
        uids = [pod["metadata"]["uid"] for pod in (await kube.list(PODS, namespace="default"))["items"]]

        async def no_submission_under_way() -> bool:
            # A duplicate would come from an sbatch the first kubelet's request left running.
            return not running("sbatch", naming=uids)

        await eventually(no_submission_under_way, timeout=60)
        found = slurm_jobs_named(prefix)
        duplicates = {name: ids for name, ids in found.items() if len(ids) != 1}
        in_flight = submitting_at_kill(first.log)
        assert duplicates == {}, f"duplicated: {duplicates}; in flight at the kill: {in_flight}"
        listing = await kube.list(PODS, namespace="default")
        annotated = {
            pod["metadata"]["name"]: pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
            for pod in listing["items"]
            if pod["metadata"]["name"].startswith(prefix)
        }
        for name, ids in found.items():
            assert annotated[name] in ids
        await second.stop()
    finally:
        await kube.close()
