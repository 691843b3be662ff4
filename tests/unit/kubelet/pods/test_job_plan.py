"""A pod's way from the provider's create to red-box's submit translates it once (the job plan).

The kubelet runs against the in-memory API server and a fake red-box; the job name rule
(``translate.job_name``) is wrapped to count its derivations per pod. A pod present at the start
is looked up by its key and then submitted; a scripted pod is named by its script's
``--job-name``; one pod's submission reply is lost, so its job is found by its key and checked
to bear the pod's job name before it is adopted: each job's name is derived once, and is the
name its job carries.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.fixtures import polling
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from wlmvk.core import names
from wlmvk.core.errors import Unavailable
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.kube import objects
from wlmvk.kube.bodies import PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.pods import translate

NODE = "slurm-test-debug"


class LosingAReply(FakeBackend):
    """The fake red-box, the reply to the first submission of ``lost``'s job lost on its way."""

    def __init__(self, lost: str) -> None:
        super().__init__()
        self.lost = lost

    async def submit(self, spec: JobSpec) -> JobId:
        job_id = await super().submit(spec)
        if spec.name == self.lost and self.submitted[spec.idempotency_key] == 1:
            raise Unavailable("the reply was lost")
        return job_id


def pod(name: str, **annotations: str) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "nodeName": NODE,
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["echo", "hi"]}],
        },
    }


async def test_each_pods_job_name_is_derived_once_from_create_to_submit(
    apiserver: RunningApiServer,
    kube: KubeClient,
    kubelet_factory: StartKubelet,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    derived: Counter[str] = Counter()
    rule = translate.job_name

    def counted(body: Body) -> str:
        derived[objects.name(body)] += 1
        return rule(body)

    monkeypatch.setattr(translate, "job_name", counted)
    fake = LosingAReply("reply-lost")
    # Present before the kubelet starts: looked up by its key (nothing found), then submitted.
    await kube.create(PODS, pod("before-start"), namespace="default")
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    script = "#!/bin/sh\n#SBATCH --job-name=from-its-script\necho hi\n"
    await kube.create(PODS, pod("scripted", **{names.ANNOTATION_BATCH: script}), namespace="default")
    await kube.create(PODS, pod("plain"), namespace="default")
    await kube.create(PODS, pod("reply-lost"), namespace="default")

    async def submitted() -> dict[str, str]:
        by_key = {spec.idempotency_key: spec.name for spec in fake.specs.values()}
        listed = await kube.list(PODS, namespace="default")
        named = {objects.name(p): by_key.get(objects.uid(p), "") for p in listed["items"]}
        assert all(named.values()), named
        return named

    names_submitted = await polling.eventually(submitted, timeout=10.0, every=0.1, tolerate=(AssertionError,))
    assert names_submitted == {
        "before-start": "before-start",
        "scripted": "from-its-script",
        "plain": "plain",
        "reply-lost": "reply-lost",
    }

    async def adopted() -> bool:
        found = await kube.get(PODS, "reply-lost", namespace="default")
        return objects.annotations(found).get(names.ANNOTATION_JOB_ID) == str(fake.job_of(objects.uid(found)))

    await polling.eventually(adopted, timeout=10.0, every=0.1)
    # The startup probe, the present pod's lookup, the lookup after the lost reply.
    assert fake.calls["find"] == 3
    assert sum(fake.submitted.values()) == 4  # once each: the lost reply's job was found, not made again
    assert derived == {"before-start": 1, "scripted": 1, "plain": 1, "reply-lost": 1}
