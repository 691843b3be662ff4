"""The Pod Security level each pod of the operator needs, asked of a real API server.

A SlurmJob's job pod is a placeholder for the scheduler (no container runs it on a real node);
its staging pods run ``wlmvk stage`` on the agent host with red-box's socket directory mounted
by hostPath, in the job's own namespace. The levels are the API server's own answer (its
PodSecurity admission, enforced per namespace by label), with server-side dry runs of the pods
the operator's code builds. docs/security.md says what a site does with the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.controlplane import RealKube
from wlmvk.core import names
from wlmvk.operator import pods, resources
from wlmvk.operator.directives import Requirements
from wlmvk.operator.settings import StagingSettings

pytestmark = pytest.mark.kube_real

LEVELS = ("restricted", "baseline", "privileged")
WORKING_DIR = "/jobs/default/sj"


def slurmjob(namespace: str) -> resources.Job:
    # The user's volume is an emptyDir: what the staging pod needs is its own hostPath.
    inputs = {"name": "inputs", "emptyDir": {}}
    body = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": "sj", "namespace": namespace, "uid": "3c1c0c4e-0000-4000-8000-000000000002"},
        "spec": {"batch": "#!/bin/sh\ntrue\n", "prepare": {"to": ".", "mount": inputs}},
    }
    return resources.parse(body)


def virtual_node() -> dict[str, Any]:
    labels = {names.LABEL_TYPE: names.TYPE_VIRTUAL_KUBELET, names.LABEL_AGENT_HOST: "agent-host"}
    return {"metadata": {"name": "slurm-c-debug", "labels": labels}}


def pod_bodies(namespace: str) -> dict[str, dict[str, Any]]:
    """The operator's job pod and prepare pod, as its code builds them."""
    job = slurmjob(namespace)
    assert job.prepare is not None
    settings = StagingSettings(image="wlmvk:latest")
    return {
        "job": pods.job_pod(job, Requirements(), working_dir=WORKING_DIR),
        "prepare": pods.prepare_pod(
            job, job.prepare, working_dir=WORKING_DIR, node=virtual_node(), settings=settings
        ),
    }


@pytest.fixture
def namespaces(real_kube: RealKube) -> Iterator[dict[str, str]]:
    """One namespace per Pod Security level, enforced."""
    made = {level: f"wlmvk-pss-{level}" for level in LEVELS}
    for level, namespace in made.items():
        real_kube.must("create", "namespace", namespace)
        real_kube.must("label", "namespace", namespace, f"pod-security.kubernetes.io/enforce={level}")
    yield made
    real_kube.run_kubectl("delete", "namespace", *made.values(), "--wait=false")


def admitted(kube: RealKube, body: dict[str, Any]) -> str:
    done = kube.run_kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(body))
    return "" if done.returncode == 0 else done.stderr.strip()


def test_job_pods_need_baseline_and_staging_pods_privileged(
    real_kube: RealKube, namespaces: dict[str, str]
) -> None:
    answers = {
        (role, level): admitted(real_kube, body)
        for level, namespace in namespaces.items()
        for role, body in pod_bodies(namespace).items()
    }
    # The job pod: a placeholder without a security context, refused only by "restricted".
    assert 'violates PodSecurity "restricted:latest"' in answers[("job", "restricted")]
    assert answers[("job", "baseline")] == answers[("job", "privileged")] == ""
    # The staging pod: red-box's socket directory by hostPath, which "baseline" forbids.
    refused = answers[("prepare", "baseline")]
    assert (
        'violates PodSecurity "baseline:latest": hostPath volumes (volume "wlmvk-red-box-socket")' in refused
    )
    assert answers[("prepare", "privileged")] == ""
