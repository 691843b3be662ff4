"""docs/security.md's confinement recipe on the real API server: every pod wlmvk needs is admitted.

The recipe enforces Pod Security "baseline" by default, exempts the operator's ServiceAccount (the
suite's plane runs with that exemption: dev/scripts/kube-local's admission configuration), holds the
operator by manifests/confine/, and leaves the namespace ``wlmvk`` at "privileged" by its label
(manifests/namespace.yaml) for the configurator's hostPath. A cluster-wide default of baseline
would change every other test's namespaces, so a namespace labelled baseline stands for an
unlabelled one of such a cluster.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.deploy.accounts import as_account
from tests.e2e.deploy.test_pod_security import admitted, pod_bodies
from tests.fixtures.controlplane import RealKube
from tests.fixtures.polling import eventually

pytestmark = pytest.mark.kube_real

ROOT = Path(__file__).resolve().parents[3]
HOSTPATH_REFUSED = 'violates PodSecurity "baseline:latest": hostPath volumes (volume "{}")'


def manifest_pods(kube: RealKube) -> dict[str, dict[str, Any]]:
    """The pod each workload of ``kubectl kustomize manifests/`` makes, by workload name."""
    rendered = subprocess.run(
        [str(kube.kubectl), "kustomize", str(ROOT / "manifests")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return {
        doc["metadata"]["name"]: {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{doc['metadata']['name']}-dry", "namespace": doc["metadata"]["namespace"]},
            "spec": doc["spec"]["template"]["spec"],
        }
        for doc in yaml.safe_load_all(rendered)
        if doc and doc["kind"] in {"Deployment", "DaemonSet"}
    }


@pytest.fixture
def baseline(real_kube: RealKube) -> Iterator[str]:
    """A users' namespace of a cluster that enforces baseline, with its own copy of the confining
    policy bound to it alone (the plane is shared; a policy of its own name races no other test)."""
    run = uuid.uuid4().hex[:6]
    namespace, policy = f"wlmvk-confine-{run}", f"wlmvk-operator-hostpath-socket-only-{run}"
    real_kube.must("create", "namespace", namespace)
    real_kube.must("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=baseline")
    real_kube.must("wait", "--for=create", "serviceaccount/default", "-n", namespace, "--timeout=60s")
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "confine" / "staging.yaml").read_text()))
    for doc in docs:
        doc["metadata"]["name"] = policy
        if doc["kind"] == "ValidatingAdmissionPolicyBinding":
            doc["spec"]["policyName"] = policy
            only = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            doc["spec"]["matchResources"] = {"namespaceSelector": only}
    real_kube.must("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    yield namespace
    real_kube.run_kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy)
    real_kube.run_kubectl("delete", "namespace", namespace, "--wait=false")


def test_the_configurator_and_operator_are_admitted_in_their_namespace_and_would_not_be_at_baseline(
    real_kube: RealKube, baseline: str
) -> None:
    made = manifest_pods(real_kube)
    assert set(made) == {"wlmvk-operator", "wlmvk-configurator"}
    labels = real_kube.must("get", "namespace", "wlmvk", "-o", "jsonpath={.metadata.labels}")
    assert json.loads(labels)["pod-security.kubernetes.io/enforce"] == "privileged"
    for name, pod in made.items():
        assert admitted(real_kube, pod) == "", name
    # Why the label: in a namespace at baseline, the configurator's hostPath is refused.
    elsewhere = {name: json.loads(json.dumps(pod)) for name, pod in made.items()}
    for pod in elsewhere.values():
        pod["metadata"]["namespace"] = baseline
        pod["spec"].pop("serviceAccountName")
    assert HOSTPATH_REFUSED.format("syslurm") in admitted(real_kube, elsewhere["wlmvk-configurator"])
    assert admitted(real_kube, elsewhere["wlmvk-operator"]) == ""


async def test_the_exempt_operator_stages_in_a_baseline_namespace_held_by_the_confining_policy(
    real_kube: RealKube, baseline: str
) -> None:
    staged = pod_bodies(baseline)["prepare"]
    # A user (here the admin, not exempt) may not create such a pod in their namespace...
    assert HOSTPATH_REFUSED.format("wlmvk-red-box-socket") in admitted(real_kube, staged)
    # ...the operator may (its ServiceAccount is exempt), and only with red-box's socket directory.
    assert as_account(real_kube, "wlmvk-operator", "create", "--dry-run=server", body=staged) == ""
    smuggled = pod_bodies(baseline, {"name": "inputs", "hostPath": {"path": "/etc"}})["prepare"]

    def refusal() -> str:
        # The API server enforces a new policy once its informer has it: wait for that.
        return as_account(real_kube, "wlmvk-operator", "create", "--dry-run=server", body=smuggled)

    refused = await eventually(refusal, timeout=30, what="the confining policy in force")
    assert refused.endswith(
        "denied request: wlmvk-operator may mount by hostPath only the red-box socket directory "
        "/var/run/syslurm, not volume inputs"
    )
    job = pod_bodies(baseline)["job"]
    assert as_account(real_kube, "wlmvk-operator", "create", "--dry-run=server", body=job) == ""
