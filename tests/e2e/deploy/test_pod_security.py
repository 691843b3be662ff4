"""The Pod Security level each pod of the operator needs, asked of a real API server.

A SlurmJob's job pod is a placeholder for the scheduler (no container runs it on a real node);
its staging pods run ``wlmvk stage`` on the agent host with red-box's socket directory mounted
by hostPath, in the job's own namespace. The levels are the API server's own answer (its
PodSecurity admission, enforced per namespace by label), with server-side dry runs of the pods
the operator's code builds. docs/security.md says what a site does with the answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.deploy.accounts import as_account
from tests.fixtures.controlplane import RealKube
from tests.fixtures.polling import eventually
from wlmvk.core import names
from wlmvk.operator import pods, resources
from wlmvk.operator.directives import Requirements
from wlmvk.operator.settings import StagingSettings

pytestmark = pytest.mark.kube_real

ROOT = Path(__file__).resolve().parents[3]
LEVELS = ("restricted", "baseline", "privileged")
POLICY = "wlmvk-operator-hostpath-socket-only"
WORKING_DIR = "/jobs/default/sj"


def slurmjob(namespace: str, inputs: dict[str, Any] | None = None) -> resources.Job:
    # By default the user's volume is an emptyDir: what the staging pod needs is its own hostPath.
    inputs = inputs or {"name": "inputs", "emptyDir": {}}
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


def pod_bodies(namespace: str, inputs: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The operator's job pod and prepare pod, as its code builds them."""
    job = slurmjob(namespace, inputs)
    assert job.prepare is not None
    settings = StagingSettings(image="wlmvk:latest")
    return {
        "job": pods.job_pod(job, Requirements(), working_dir=WORKING_DIR),
        "prepare": pods.prepare_pod(
            job,
            job.prepare,
            working_dir=WORKING_DIR,
            node=(node := virtual_node()),
            socket=pods.socket_of(node, settings),
            settings=settings,
        ),
    }


@pytest.fixture
def namespaces(real_kube: RealKube) -> Iterator[dict[str, str]]:
    """One namespace per Pod Security level, enforced (a fresh name: a namespace's deletion takes time)."""
    run = uuid.uuid4().hex[:6]
    made = {level: f"wlmvk-pss-{level}-{run}" for level in LEVELS}
    for level, namespace in made.items():
        real_kube.must("create", "namespace", namespace)
        real_kube.must("label", "namespace", namespace, f"pod-security.kubernetes.io/enforce={level}")
    for namespace in made.values():  # a pod is admitted once its namespace's default account exists
        real_kube.must("wait", "--for=create", "serviceaccount/default", "-n", namespace, "--timeout=60s")
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


@pytest.fixture
def confined(real_kube: RealKube, namespaces: dict[str, str]) -> Iterator[str]:
    """manifests/confine/, its binding narrowed to one test namespace (the plane is shared)."""
    namespace = namespaces["privileged"]
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "confine" / "staging.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "ValidatingAdmissionPolicyBinding":
            only = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            doc["spec"]["matchResources"] = {"namespaceSelector": only}
    real_kube.must("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    yield namespace
    real_kube.run_kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", POLICY)


async def test_a_confined_operator_mounts_no_host_directory_of_the_user(
    real_kube: RealKube, confined: str
) -> None:
    # As the operator itself: its staging pod with a hostPath as the user's volume, then an emptyDir.
    smuggled = pod_bodies(confined, {"name": "inputs", "hostPath": {"path": "/etc"}})["prepare"]

    def refusal() -> str:
        # The API server enforces a new policy once its informer has it: wait for that.
        return as_account(real_kube, "wlmvk-operator", "create", "--dry-run=server", body=smuggled)

    refused = await eventually(refusal, timeout=30, what="the confining policy in force")
    message = (
        "wlmvk-operator may mount by hostPath only the red-box socket directory /var/run/syslurm, "
        "not volume inputs"
    )
    assert (
        f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: {message}" in refused
    )
    staged = pod_bodies(confined)["prepare"]
    assert as_account(real_kube, "wlmvk-operator", "create", "--dry-run=server", body=staged) == ""
