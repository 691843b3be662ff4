"""The configurator as deployed: the real DaemonSet controller's pod runs ``wlmvk kubelet``.

On the real control plane, ``kubectl apply -k manifests/`` creates the configurator
DaemonSet; its pod lands on the agent node the user labelled (a ``wlmvk dev node``,
whose ``--image`` runs this checkout's ``wlmvk`` for the manifests' image) and runs
``wlmvk kubelet`` as uid 1000 with the ``wlmvk-kubelet`` ServiceAccount's token, found
the in-cluster way (the projected token and ``KUBERNETES_SERVICE_HOST``). It registers
every partition of the red-box behind the socket as a virtual node, a pod on one of
them becomes a Slurm job, and ``kubectl logs`` reaches the kubelet through the API server.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.controlplane import AGENT_NODE, RealKube
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core import names

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.kube_real, pytest.mark.slurm]
RED_BOX_LABEL = "wlm.sylabs.io/red-box"
NODE = names.node_name(AGENT_NODE, "debug")


async def until(kube: RealKube, what: str, probe: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f} s\n{configurator_state(kube)}")
        await asyncio.sleep(0.5)


def configurator_state(kube: RealKube) -> str:
    """What a user would look at: the configurator's pods, their events and the kubelet's log."""
    selector = "app.kubernetes.io/name=wlmvk-configurator"
    shown = [
        kube.run_kubectl("get", "pods", "-A", "-o", "wide"),
        kube.run_kubectl("describe", "pods", "-n", "wlmvk", "-l", selector),
        kube.run_kubectl("logs", "-n", "wlmvk", "-l", selector, "--tail=40"),
    ]
    return "\n".join(done.stdout + done.stderr for done in shown)


def hello_pod() -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hello-configurator", "namespace": "default"},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {names.LABEL_HOSTNAME: NODE},
                "tolerations": [{"key": names.TAINT_KEY, "operator": "Exists"}],
                "containers": [{"name": "main", "image": "busybox", "command": ["echo", "hello from slurm"]}],
            },
        }
    )


def phase(kube: RealKube, pod: str) -> str:
    return kube.run_kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}").stdout.strip()


async def test_the_daemonset_pod_runs_wlmvk_kubelet_and_its_nodes_run_pods(
    real_kube: RealKube, real_agent_node: str, redbox_factory: Callable[..., RedBox]
) -> None:
    box = redbox_factory(user=JOB_OWNER)
    socket = Path(box.socket)
    real_kube.must("label", "node", real_agent_node, f"{RED_BOX_LABEL}=true", "--overwrite")
    try:
        real_kube.must("apply", "-k", str(ROOT / "manifests"))
        # The operator's own tests run their operator; two more leaders would compete with it.
        real_kube.must("scale", "-n", "wlmvk", "deployment/wlmvk-operator", "--replicas=0")
        # As a user adapts the manifest (kustomize): where this host's red-box socket is.
        patch = [
            {
                "op": "replace",
                "path": "/spec/template/spec/volumes/0/hostPath/path",
                "value": str(socket.parent),
            },
            {
                "op": "replace",
                "path": "/spec/template/spec/containers/0/args/1",
                "value": f"--red-box-socket=/var/run/syslurm/{socket.name}",
            },
        ]
        real_kube.must(
            "patch", "-n", "wlmvk", "daemonset/wlmvk-configurator", "--type=json", "-p", json.dumps(patch)
        )

        def node_ready() -> bool:
            ready = real_kube.run_kubectl(
                "get", "node", NODE, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
            )
            return ready.stdout.strip() == "True"

        await until(real_kube, f"virtual node {NODE} Ready", node_ready)
        pods = json.loads(
            real_kube.must(
                "get", "pods", "-n", "wlmvk", "-l", "app.kubernetes.io/name=wlmvk-configurator", "-o", "json"
            )
        )["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        assert [(p["spec"]["nodeName"], p["spec"]["serviceAccountName"]) for p in running] == [
            (AGENT_NODE, "wlmvk-kubelet")
        ]
        node = json.loads(real_kube.must("get", "node", NODE, "-o", "json"))
        assert node["metadata"]["labels"][names.LABEL_AGENT_HOST] == AGENT_NODE

        real_kube.must("create", "-f", "-", input=hello_pod())
        assert await until(
            real_kube, "pod Succeeded", lambda: phase(real_kube, "hello-configurator") == "Succeeded"
        )
        logs = real_kube.run_kubectl("logs", "hello-configurator")
        assert (logs.returncode, logs.stdout) == (0, "hello from slurm\n"), logs.stderr
    finally:
        real_kube.run_kubectl("delete", "pod", "hello-configurator", "--wait=false")
        real_kube.run_kubectl(
            "delete", "-n", "wlmvk", "deployment/wlmvk-operator", "daemonset/wlmvk-configurator"
        )
        real_kube.run_kubectl("label", "node", real_agent_node, f"{RED_BOX_LABEL}-")
