"""wlmvk deployed on the real control plane as a user deploys it: ``kubectl apply -k manifests/``.

Only a real control plane can say these things: the CRDs pass apiextensions' own
structural-schema checks, the RBAC objects are accepted, and the real DaemonSet and
Deployment controllers create the configurator and operator pods with the
ServiceAccounts the manifests give them, on the agent node the user labelled.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.controlplane import AGENT_NODE, RealKube

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.kube_real
RED_BOX_LABEL = "wlm.sylabs.io/red-box"


def pods_of(kube: RealKube, app: str) -> list[dict[str, Any]]:
    out = kube.must("get", "pods", "-n", "wlmvk", "-l", f"app.kubernetes.io/name={app}", "-o", "json")
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


async def eventually_pods(kube: RealKube, app: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = [p for p in pods_of(kube, app) if p["spec"].get("nodeName")]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.5)


async def test_kubectl_apply_k_installs_everything_and_the_controllers_place_its_pods(
    real_kube: RealKube, real_agent_node: str
) -> None:
    real_kube.must("label", "node", real_agent_node, f"{RED_BOX_LABEL}=true", "--overwrite")
    try:
        applied = real_kube.must("apply", "-k", str(ROOT / "manifests"))
        for line in (
            "namespace/wlmvk",
            "customresourcedefinition.apiextensions.k8s.io/slurmjobs.wlm.sylabs.io",
            "customresourcedefinition.apiextensions.k8s.io/wlmjobs.wlm.sylabs.io",
            "serviceaccount/wlmvk-operator",
            "clusterrole.rbac.authorization.k8s.io/wlmvk-kubelet",
            "deployment.apps/wlmvk-operator",
            "daemonset.apps/wlmvk-configurator",
            "validatingadmissionpolicy.admissionregistration.k8s.io/wlmvk-kubelet-own-nodes",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/wlmvk-operator-own-pods",
        ):
            assert line in applied, applied
        again = real_kube.must("apply", "-k", str(ROOT / "manifests"))
        assert "configured" not in again, again
        crd = json.loads(real_kube.must("get", "crd", "slurmjobs.wlm.sylabs.io", "-o", "json"))
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True"
        assert conditions["NamesAccepted"] == "True"
        assert "NonStructuralSchema" not in conditions
        # The DaemonSet controller puts one configurator on the labelled agent node.
        configurators = await eventually_pods(real_kube, "wlmvk-configurator", 1)
        assert [p["spec"]["nodeName"] for p in configurators] == [AGENT_NODE]
        assert configurators[0]["spec"]["serviceAccountName"] == "wlmvk-kubelet"
        # The Deployment's two operator replicas are created and scheduled.
        operators = await eventually_pods(real_kube, "wlmvk-operator", 2)
        assert len(operators) == 2
        assert {p["spec"]["serviceAccountName"] for p in operators} == {"wlmvk-operator"}
    finally:
        real_kube.run_kubectl(
            "delete", "-n", "wlmvk", "deployment/wlmvk-operator", "daemonset/wlmvk-configurator"
        )
        # The tenancy policy is not among what the plane's tests share (INSTALLED): the tenancy
        # tests judge the kubelet's refusals with it absent, and its own test installs it.
        real_kube.run_kubectl(
            "delete", "--ignore-not-found", "-f", str(ROOT / "manifests" / "tenancy-admission.yaml")
        )
        real_kube.run_kubectl("label", "node", real_agent_node, f"{RED_BOX_LABEL}-")
