"""A SubmitJob whose reply is lost (red-box ran sbatch, then the connection dropped) and a pod
deleted right after: the kubelet must find the job by its key and cancel it, not let the pod go
and leave the job behind. (bench/faults_run.py found this as orphaned held jobs after red-box
outages; here the lost reply is made deterministic with a backend that drops the first reply.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest

from tests.faults import churn
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import RedBox
from wlmvk.core.backend import Backend
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]


class LosesFirstReply:
    """The real client, except that the first submission's reply never arrives."""

    def __init__(self, inner: RedBoxClient) -> None:
        self.inner = inner
        self.lost: list[JobId] = []
        self.submitted = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def submit(self, spec: JobSpec) -> JobId:
        job_id = await self.inner.submit(spec)
        if not self.lost:
            self.lost.append(job_id)
            self.submitted.set()
            raise Unavailable("SubmitJob: connection to red-box lost (the reply never came)")
        return job_id


async def test_a_pod_deleted_after_a_lost_submit_reply_has_its_job_cancelled(
    slurm: str,
    apiserver: RunningApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
) -> None:
    box = redbox_factory()
    client = RedBoxClient(box.socket, timeout=30)
    backend = LosesFirstReply(client)
    kube = await KubeClient.connect(str(apiserver.kubeconfig))
    try:
        await kubelet_factory(
            kubeconfig=apiserver.kubeconfig, backend=cast(Backend, backend), cluster_name="faults"
        )
        body = await kube.create(PODS, churn.pod_body("lost-reply", churn.HELD), namespace="default")
        uid = body["metadata"]["uid"]
        await asyncio.wait_for(backend.submitted.wait(), 60)
        await kube.delete(PODS, "lost-reply", namespace="default")

        async def gone() -> bool:
            listing = await kube.list(PODS, namespace="default")
            return not [p for p in listing["items"] if p["metadata"]["uid"] == uid]

        assert await churn.wait_for(gone, 60)
        jobs = churn.slurm_jobs_by_key().get(uid, {})
        assert jobs, "the lost submission's job is not in Slurm at all"
        assert {job: state for job, state in jobs.items() if state in churn.ALIVE} == {}, jobs
        assert list(jobs) == [str(backend.lost[0])]
    finally:
        churn.scancel([int(j) for j in backend.lost])
        await kube.close()
        await client.close()
