"""wlmvk deployed on a real node: the manifests' pods run as containers of wlmvk's image.

The node is a kubelet built from the plane's own Kubernetes module with containerd from
Debian's packages (``tests.fixtures.realnode``: a plane of its own beside the shared one).
``kubectl apply -k manifests/`` creates the configurator DaemonSet and the operator
Deployment, with a site's overlay naming the image in a registry (kustomize ``images:``, one
setting for every pod, the staging pods' included); containerd pulls it from the registry
(``tests.fixtures.realnode``) and runs them, as uid 1000
on a read-only root, with their ServiceAccounts' projected tokens reaching the API server
through the kubernetes Service. Then the original README's session passes through them: a
SlurmJob whose data is prepared and whose results are collected by staging pods, which run
as containers on the same node with the red-box socket's directory mounted.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.controlplane import RealKube
from tests.fixtures.helm import CHART, HELM
from tests.fixtures.polling import eventually
from tests.fixtures.prerequisites import missing
from tests.fixtures.realnode import RealNode
from tests.fixtures.redbox import JOB_OWNER, RedBox
from tests.fixtures.seeddirs import seed_dirs
from wlmvk.core import names

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.kube_real, pytest.mark.real_node, pytest.mark.slurm, pytest.mark.kubectl]
RED_BOX_LABEL = "wlm.sylabs.io/red-box"
UID = 1000  # the manifests' runAsUser, and the job owner red-box runs as
CONFIGURATOR = "app.kubernetes.io/name=wlmvk-configurator"
OPERATOR = "app.kubernetes.io/name=wlmvk-operator"


def state(kube: RealKube) -> str:
    """What a user would look at: every pod, the wlmvk pods' descriptions and logs, the jobs."""
    shown = [
        kube.run_kubectl("get", "pods", "-A", "-o", "wide"),
        kube.run_kubectl("describe", "pods", "-n", "wlmvk"),
        kube.run_kubectl("logs", "-n", "wlmvk", "-l", CONFIGURATOR, "--tail=30"),
        kube.run_kubectl("logs", "-n", "wlmvk", "-l", OPERATOR, "--tail=30"),
        kube.run_kubectl("describe", "slurmjobs", "-n", "default"),
    ]
    return "\n".join(done.stdout + done.stderr for done in shown)


def pods(kube: RealKube, *args: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(kube.must("get", "pods", *args, "-o", "json"))["items"]
    return items


def running(kube: RealKube, selector: str, count: int) -> list[dict[str, Any]] | None:
    """The ``count`` wlmvk pods of ``selector``, once each is Ready with its containers running."""
    found = pods(kube, "-n", "wlmvk", "-l", selector)
    if len(found) != count:
        return None
    for pod in found:
        statuses = pod["status"].get("containerStatuses") or []
        if not statuses or not all(s.get("ready") and "running" in s.get("state", {}) for s in statuses):
            return None
    return found


@pytest.fixture
def node_dirs() -> Iterator[tuple[Path, Path]]:
    """The README's /home/docker/{inputs,outputs} on the node, as the user prepared them."""
    with seed_dirs("realnode-", UID) as dirs:
        yield dirs


def deploy(kube: RealKube, node: str, socket: Path, image: str) -> str:
    """``kubectl apply -k`` of a site's overlay of manifests/ naming ``image`` (docs/deployment.md,
    step 3), adapted as a site adapts it: where red-box's socket is."""
    kube.must("label", "node", node, f"{RED_BOX_LABEL}=true", "--overwrite")
    overlay = kube.workdir / "overlay"
    overlay.mkdir(exist_ok=True)
    name, _, tag = image.rpartition(":")
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(ROOT / "manifests", overlay)],
                "images": [{"name": "wlmvk", "newName": name, "newTag": tag}],
            }
        )
    )
    applied = kube.must("apply", "-k", str(overlay))
    # The socket's directory at the same path inside as on the host: the virtual nodes
    # announce that path, and the staging pods mount it from the host.
    configurator = [
        {"op": "replace", "path": "/spec/template/spec/volumes/0/hostPath/path", "value": str(socket.parent)},
        {
            "op": "replace",
            "path": "/spec/template/spec/containers/0/volumeMounts/0/mountPath",
            "value": str(socket.parent),
        },
        {
            "op": "replace",
            "path": "/spec/template/spec/containers/0/args/1",
            "value": f"--red-box-socket={socket}",
        },
    ]
    kube.must(
        "patch", "-n", "wlmvk", "daemonset/wlmvk-configurator", "--type=json", "-p", json.dumps(configurator)
    )
    operator = [
        {
            "op": "replace",
            "path": "/spec/template/spec/containers/0/args/1",
            "value": f"--red-box-socket={socket}",
        }
    ]
    kube.must("patch", "-n", "wlmvk", "deployment/wlmvk-operator", "--type=json", "-p", json.dumps(operator))
    return applied


def logged(kube: RealKube, selector: str, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of the wlmvk pods of ``selector`` (``kubectl logs``) with this event."""
    out = kube.must("logs", "-n", "wlmvk", "-l", selector, "--tail=-1", "--prefix=false")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


def node_ready(kube: RealKube, node: str) -> bool:
    ready = kube.run_kubectl(
        "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"
    )
    return ready.stdout == "True"


def finished(kube: RealKube, job: str) -> str | None:
    status = kube.run_kubectl("get", "slurmjob", job, "-o", "jsonpath={.status.status}").stdout
    return status if status in ("Succeeded", "Failed") else None


def example(node: str, inputs: Path, outputs: Path) -> str:
    """The README's example as shipped, on this cluster's partition and the node's directories."""
    doc = yaml.safe_load((ROOT / "examples" / "prepare-and-results.yaml").read_text())
    doc["spec"]["nodeSelector"][names.LABEL_HOSTNAME] = node
    doc["spec"]["prepare"]["mount"]["hostPath"]["path"] = str(inputs)
    doc["spec"]["results"]["mount"]["hostPath"]["path"] = str(outputs)
    return str(yaml.safe_dump(doc))


async def rolled_out(kube: RealKube) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The configurator's pod and the operator's two, rolled out and running."""
    for workload in ("daemonset/wlmvk-configurator", "deployment/wlmvk-operator"):
        kube.must("rollout", "status", "-n", "wlmvk", workload, "--timeout=300s")
    configurators = await eventually(
        what="the configurator running", check=lambda: running(kube, CONFIGURATOR, 1), timeout=180, every=1
    )
    operators = await eventually(
        what="two operators running", check=lambda: running(kube, OPERATOR, 2), timeout=180, every=1
    )
    return configurators, operators


def helm(kube: RealKube, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HELM), "--kubeconfig", str(kube.admin), *args],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


async def test_the_chart_installs_the_registrys_image_and_uninstalls_to_nothing(
    real_node: RealNode, redbox_factory: Callable[..., RedBox]
) -> None:
    """docs/deployment.md's `helm install` with the image and the socket set (runs first: the next
    test's `kubectl apply` would leave objects Helm does not own)."""
    kube, node = real_node.kube, real_node.name
    if not HELM.exists():
        missing(f"Helm at {HELM}: dev/scripts/helm-build builds it")
    box = redbox_factory(user=JOB_OWNER)
    virtual = names.node_name(node, "cpu")
    kube.must("label", "node", node, f"{RED_BOX_LABEL}=true", "--overwrite")
    try:
        installed = helm(
            kube,
            "install",
            "wlmvk",
            str(CHART),
            "--set",
            f"image={real_node.image}",
            "--set",
            f"redBoxSocket={box.socket}",
        )
        assert installed.returncode == 0, installed.stderr
        configurators, operators = await rolled_out(kube)
        for pod in [*configurators, *operators]:
            [status] = pod["status"]["containerStatuses"]
            assert status["image"] == real_node.image, status
            assert status["imageID"].startswith(real_node.image.rpartition(":")[0] + "@sha256:"), status
        await eventually(
            lambda: node_ready(kube, virtual), what=f"virtual node {virtual} Ready", timeout=180, every=1
        )
    except BaseException:
        print(state(kube))
        raise
    finally:
        uninstalled = helm(kube, "uninstall", "wlmvk", "--wait", "--timeout=300s")
        kube.run_kubectl("delete", "node", "-l", f"type=virtual-kubelet,{names.LABEL_CLUSTER}")
        kube.run_kubectl("label", "node", node, f"{RED_BOX_LABEL}-")
    assert uninstalled.returncode == 0, uninstalled.stderr

    def gone() -> bool:
        rendered = kube.must("kustomize", str(ROOT / "manifests"))
        left = kube.must("get", "-f", "-", "--ignore-not-found", "-o", "name", input=rendered)
        return left == ""

    # Nothing of the chart's (the namespace goes last, once its pods are gone).
    await eventually(gone, what="every object of the chart gone", timeout=180, every=1)


async def test_the_manifests_run_in_containers_and_the_readme_session_passes_through_them(
    real_node: RealNode, redbox_factory: Callable[..., RedBox], node_dirs: tuple[Path, Path]
) -> None:
    kube, node = real_node.kube, real_node.name
    inputs, outputs = node_dirs
    box = redbox_factory(user=JOB_OWNER)
    virtual = names.node_name(node, "cpu")
    try:
        applied = deploy(kube, node, Path(box.socket), real_node.image)
        assert "daemonset.apps/wlmvk-configurator created" in applied, applied
        assert "deployment.apps/wlmvk-operator created" in applied, applied

        # The DaemonSet's pod and the Deployment's two replicas, Ready, in containers: the
        # patched ones (the first, unpatched, are replaced as the controllers roll them out).
        configurators, operators = await rolled_out(kube)
        for pod in [*configurators, *operators]:
            assert pod["spec"]["nodeName"] == node
            [status] = pod["status"]["containerStatuses"]
            assert status["containerID"].startswith("containerd://"), status
            assert status["image"] == real_node.image, status
            # Pulled from the registry (an imported image has no repository digest).
            assert status["imageID"].startswith(real_node.image.rpartition(":")[0] + "@sha256:"), status
        # The configurator's kubelet registered the partitions, through the in-cluster token.
        await eventually(
            lambda: node_ready(kube, virtual), what=f"virtual node {virtual} Ready", timeout=180, every=1
        )
        configurator = configurators[0]["metadata"]["name"]
        who = kube.run_kubectl("exec", "-n", "wlmvk", configurator, "--", "id", "-u")
        assert (who.returncode, who.stdout) == (0, f"{UID}\n"), who.stderr
        write = kube.run_kubectl("exec", "-n", "wlmvk", configurator, "--", "touch", "/opt/wlmvk/x")
        assert write.returncode == 1
        assert "Read-only file system" in write.stderr, write.stderr

        # The README's session.
        created = kube.must("apply", "-f", "-", input=example(virtual, inputs, outputs))
        assert created.strip() == "slurmjob.wlm.sylabs.io/prepare-and-results created"
        phase = await eventually(
            what="the SlurmJob finished",
            check=lambda: finished(kube, "prepare-and-results"),
            timeout=300,
            every=1,
        )
        assert phase == "Succeeded", state(kube)
        result = outputs / "bar" / "output.txt"
        assert result.read_text() == "foo\nslurm\n"
        assert (result.stat().st_uid, result.stat().st_gid) == (UID, UID)

        # The staging pods ran as containers on the node; the job pod on the partition's node.
        staged = {p["metadata"]["name"]: p for p in pods(kube, "-n", "default")}
        for name in ("prepare-and-results-job-prepare", "prepare-and-results-job-collect"):
            pod = staged[name]
            assert pod["spec"]["nodeName"] == node
            assert pod["status"]["phase"] == "Succeeded"
            [status] = pod["status"]["containerStatuses"]
            assert status["containerID"].startswith("containerd://"), status
            assert status["state"]["terminated"]["exitCode"] == 0
            # The operator's own image, the overlay's: no --stage-image names another.
            assert (pod["spec"]["containers"][0]["image"], status["image"]) == (real_node.image,) * 2
        assert staged["prepare-and-results-job"]["spec"]["nodeName"] == virtual
        logs = kube.run_kubectl("logs", "prepare-and-results-job")
        assert (logs.returncode, logs.stdout) == (0, "Hello\n"), logs.stderr
        # What the containers said, through the real kubelet: the configurator serves the
        # partition's node, the leading operator created the staging pods.
        [started] = logged(kube, CONFIGURATOR, "kubelet started")
        assert (started["cluster"], virtual in started["nodes"]) == (node, True), started
        created_pods = {e["pod"] for e in logged(kube, OPERATOR, "created pod")}
        assert {"prepare-and-results-job-prepare", "prepare-and-results-job-collect"} <= created_pods
    except BaseException:
        print(state(kube))
        raise
    finally:
        kube.run_kubectl("delete", "slurmjob", "prepare-and-results", "--wait=false")
        kube.run_kubectl("delete", "-n", "wlmvk", "deployment/wlmvk-operator", "daemonset/wlmvk-configurator")
        kube.run_kubectl("label", "node", node, f"{RED_BOX_LABEL}-")
