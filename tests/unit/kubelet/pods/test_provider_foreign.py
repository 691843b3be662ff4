"""The provider and a FOREIGN pod (its annotation names another's job): the pod's key decides.

A job found under the pod's UID, named as the pod, is the pod's: adopted while the pod lives,
cancelled when the pod is deleted before its sync. The claimed job is never touched.
"""

from __future__ import annotations

import structlog

from tests.unit.kubelet.fakebackend import PARTITIONS, FakeBackend
from tests.unit.kubelet.podbodies import BASE, pod
from wlmvk.core import names
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.pods.provider import SlurmProvider, Started
from wlmvk.kubelet.pods.records import PodRecord, slim
from wlmvk.kubelet.pods.states import Stage
from wlmvk.kubelet.pods.translate import Rejection

UID = str(BASE["metadata"]["uid"])
LOG = structlog.get_logger(__name__)
SCRIPT = "#!/bin/sh\n"


async def _setup(*, own_job: bool) -> tuple[FakeBackend, SlurmProvider, PodRecord, JobId, JobId | None]:
    fake = FakeBackend()
    other = await fake.submit(JobSpec(script=SCRIPT, partition="debug", name="x", idempotency_key="x"))
    own = None
    if own_job:  # a predecessor's submission, under the pod's key and name, never annotated
        own = await fake.submit(JobSpec(script=SCRIPT, partition="debug", name="cow", idempotency_key=UID))
    directory = NodeDirectory("vm")
    directory.set("slurm-vm-debug", PARTITIONS["debug"])
    provider = SlurmProvider(
        backend=fake,
        directory=directory,
        metrics=KubeletMetrics(dict),
        jobs_root="/jobs",
        submissions=1,
        lookup_grace=0.0,
    )
    body = pod(metadata={"annotations": {names.ANNOTATION_JOB_ID: str(other)}})
    record = PodRecord(uid=UID, pod=slim(body), stage=Stage.FOREIGN, claimed=other)
    fake.calls.clear()
    return fake, provider, record, other, own


async def test_a_foreign_pod_adopts_the_job_under_its_key() -> None:
    fake, provider, record, other, own = await _setup(own_job=True)
    assert own is not None
    outcome = await provider.create(record, LOG)
    assert outcome == Started(
        own,
        "Adopted",
        f"Adopted Slurm job {own} (found by this pod's key; the annotation named job {other}, another's)",
    )
    assert (record.stage, record.job_id, record.claimed) == (Stage.TRACKING, own, None)
    assert fake.calls == {"find": 1}


async def test_a_foreign_pod_without_a_job_under_its_key_fails_foreign_job() -> None:
    fake, provider, record, other, _ = await _setup(own_job=False)
    outcome = await provider.create(record, LOG)
    assert outcome == Rejection(
        "ForeignJob",
        f"annotation {names.ANNOTATION_JOB_ID}={other}: that Slurm job is not this pod's"
        " (its key is not the pod's UID); it is not adopted",
    )
    assert (record.stage, record.job_id, record.claimed) == (Stage.FOREIGN, None, other)
    assert fake.calls == {"find": 1}  # nothing submitted


async def test_a_foreign_pod_deleted_before_its_sync_has_its_own_job_cancelled() -> None:
    fake, provider, record, other, own = await _setup(own_job=True)
    assert own is not None
    assert await provider.delete(record, LOG) is False  # cancelled; its end is awaited
    assert (record.stage, record.job_id) == (Stage.CANCELLING, own)
    assert fake.jobs[own].status is JobStatus.CANCELLED
    assert fake.jobs[other].status is JobStatus.PENDING
    assert fake.calls == {"find": 1, "cancel": 1}
