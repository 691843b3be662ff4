"""What each ServiceAccount may do on the real control plane, compared with what it needs.

RBAC (manifests/rbac.yaml): ``kubectl auth can-i --list`` for each account, in each namespace
it works in, must equal the verbs its component's code uses: a verb more is a privilege nobody
reviewed, a verb less a Forbidden in production. Admission (manifests/admission.yaml) narrows
those verbs to the account's own objects, which RBAC cannot name: asked with server-side
dry runs, so nothing changes whatever the answer.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.fixtures.controlplane import RealKube

pytestmark = pytest.mark.kube_real

KUBELET = "system:serviceaccount:wlmvk:wlmvk-kubelet"
OPERATOR = "system:serviceaccount:wlmvk:wlmvk-operator"
# Every authenticated user may ask who it is and what it may do (system:basic-user).
EVERYONE = {
    "selfsubjectreviews.authentication.k8s.io": {"create"},
    "selfsubjectaccessreviews.authorization.k8s.io": {"create"},
    "selfsubjectrulesreviews.authorization.k8s.io": {"create"},
}
KUBELET_EVERYWHERE = {
    **EVERYONE,
    "events": {"create", "patch"},  # Events about its pods and nodes (folded by count)
    "nodes": {"get", "list", "create", "patch", "delete"},  # one per partition; gone with it
    "nodes/status": {"patch"},  # conditions, capacity, heartbeat
    "pods": {"get", "list", "watch", "patch", "delete"},  # watch; job-id annotation; release
    "pods/status": {"patch"},  # the job's state as the pod's
    "tokenreviews.authentication.k8s.io": {"create"},  # who calls its API (kubelet authn)
    "subjectaccessreviews.authorization.k8s.io": {"create"},  # may they (kubelet authz)
}
OPERATOR_EVERYWHERE = {
    **EVERYONE,
    "events": {"create", "patch"},
    "pods": {"get", "list", "watch", "create"},  # prepare, job and collect pods
    "nodes": {"get", "list", "watch"},  # placement on virtual nodes
    "slurmjobs.wlm.sylabs.io": {"get", "list", "watch"},
    "wlmjobs.wlm.sylabs.io": {"get", "list", "watch"},
    "slurmjobs.wlm.sylabs.io/status": {"patch"},
    "wlmjobs.wlm.sylabs.io/status": {"patch"},
}
NEED = {
    (KUBELET, "default"): KUBELET_EVERYWHERE,
    (KUBELET, "kube-node-lease"): {
        **KUBELET_EVERYWHERE,
        "leases.coordination.k8s.io": {"get", "create", "patch", "delete"},  # node heartbeats
    },
    (OPERATOR, "default"): OPERATOR_EVERYWHERE,
    (OPERATOR, "wlmvk"): {
        **OPERATOR_EVERYWHERE,
        "leases.coordination.k8s.io": {"get", "create", "update"},  # leader election
    },
}


def granted(kube: RealKube, user: str, namespace: str) -> dict[str, set[str]]:
    """``kubectl auth can-i --list``'s resource rows (non-resource URLs are discovery's)."""
    out = kube.must("auth", "can-i", "--list", "--as", user, "-n", namespace)
    rows: dict[str, set[str]] = {}
    for line in out.splitlines()[1:]:
        columns = re.split(r"\s{2,}", line.strip())
        if line.startswith(" ") or len(columns) != 4:
            continue
        resource, _, names, verbs = columns
        assert names == "[]", f"{user} has a rule limited to names: {line}"
        rows.setdefault(resource, set()).update(verbs.strip("[]").split())
    return rows


@pytest.mark.parametrize(("user", "namespace"), list(NEED), ids=[f"{u.split(':')[-1]}-{n}" for u, n in NEED])
def test_each_account_may_do_exactly_what_its_component_needs(
    real_kube: RealKube, user: str, namespace: str
) -> None:
    assert granted(real_kube, user, namespace) == NEED[(user, namespace)]


def dry_run(kube: RealKube, user: str, *args: str, body: dict[str, object] | None = None) -> str:
    """A write as ``user``, server-side dry run: '' when admitted, else the refusal."""
    argv = [*args, "--as", user, "--dry-run=server"]
    if body is not None:
        argv += ["-f", "-"]
    done = kube.run_kubectl(*argv, input=json.dumps(body) if body is not None else None)
    return "" if done.returncode == 0 else done.stderr.strip()


def node(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def lease(name: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name},
    }


def pod(name: str, node_name: str, **metadata: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **metadata},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}]},
    }


def denied(policy: str, message: str) -> str:
    return f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: {message}"


NOT_VIRTUAL = "wlmvk-kubelet may change only virtual nodes (label type=virtual-kubelet)"
NOT_ITS_POD = "wlmvk-kubelet may change only pods bound to its virtual nodes (slurm-...)"
NOT_ITS_LEASE = "wlmvk-kubelet may hold only the Leases of its virtual nodes (slurm-...)"
NOT_ITS_JOB = (
    "wlmvk-operator may create only the pods of its SlurmJobs and WlmJobs (label "
    "app.kubernetes.io/managed-by=wlmvk-operator, controlled by a SlurmJob or WlmJob)"
)


def test_the_kubelet_touches_only_virtual_nodes_their_pods_and_leases(
    real_kube: RealKube, real_agent_node: str
) -> None:
    # Nodes: a real one (the agent host) is out of reach, a virtual one is not.
    refused = denied("wlmvk-kubelet-own-nodes", NOT_VIRTUAL)
    assert refused in dry_run(real_kube, KUBELET, "label", "node", real_agent_node, "x=y")
    assert refused in dry_run(real_kube, KUBELET, "delete", "node", real_agent_node)
    assert refused in dry_run(real_kube, KUBELET, "create", body=node("slurm-forged"))
    assert dry_run(real_kube, KUBELET, "create", body=node("slurm-c-debug", type="virtual-kubelet")) == ""
    # Pods: those bound to a virtual node only (created as admin, then written as the kubelet).
    real_kube.must("create", "-f", "-", input=json.dumps(pod("on-host", real_agent_node)))
    real_kube.must("create", "-f", "-", input=json.dumps(pod("on-slurm", "slurm-c-debug")))
    try:
        refused = denied("wlmvk-kubelet-own-pods", NOT_ITS_POD)
        assert refused in dry_run(real_kube, KUBELET, "annotate", "pod", "on-host", "a=b")
        assert refused in dry_run(real_kube, KUBELET, "delete", "pod", "on-host")
        assert dry_run(real_kube, KUBELET, "annotate", "pod", "on-slurm", "a=b") == ""
        assert dry_run(real_kube, KUBELET, "delete", "pod", "on-slurm") == ""
    finally:
        real_kube.run_kubectl("delete", "pod", "on-host", "on-slurm", "--grace-period=0", "--force")
    # Leases: only its nodes' heartbeats.
    refused = denied("wlmvk-kubelet-own-leases", NOT_ITS_LEASE)
    assert refused in dry_run(real_kube, KUBELET, "create", body=lease(real_agent_node))
    assert refused in dry_run(real_kube, KUBELET, "delete", "lease", "-n", "kube-node-lease", real_agent_node)
    assert dry_run(real_kube, KUBELET, "create", body=lease("slurm-c-debug")) == ""


def test_the_operator_creates_only_the_pods_of_its_jobs(real_kube: RealKube) -> None:
    refused = denied("wlmvk-operator-own-pods", NOT_ITS_JOB)
    assert refused in dry_run(real_kube, OPERATOR, "create", body=pod("sneaky", "slurm-c-debug"))
    owned = {
        "labels": {"app.kubernetes.io/managed-by": "wlmvk-operator"},
        "ownerReferences": [
            {
                "apiVersion": "wlm.sylabs.io/v1alpha1",
                "kind": "SlurmJob",
                "name": "sj",
                "uid": "3c1c0c4e-0000-4000-8000-000000000001",
                "controller": True,
            }
        ],
    }
    assert dry_run(real_kube, OPERATOR, "create", body=pod("job-pod", "slurm-c-debug", **owned)) == ""
