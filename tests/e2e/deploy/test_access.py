"""What each ServiceAccount may do on the real control plane, compared with what it needs.

RBAC (manifests/rbac.yaml): ``kubectl auth can-i --list`` for each account, in each namespace
it works in, must equal the verbs its component's code uses: a verb more is a privilege nobody
reviewed, a verb less a Forbidden in production. Admission (manifests/admission.yaml) narrows
those verbs to the account's own objects, which RBAC cannot name: tried with each account's own
token (a TokenRequest kubeconfig, not impersonation), as server-side dry runs where a success
would change what is not the test's; the kubelet's own node is registered, changed and removed
for real. The in-memory API server stores admission policies but never enforces them: these
tests need the real one (kube_real).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.e2e.deploy.accounts import as_account
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
    "slurmtenants.wlm.sylabs.io": {"get", "list", "watch"},  # whose jobs run as whom (tenants.yaml)
    "slurmtenants.wlm.sylabs.io/status": {"update"},  # whether Slurm knows them (tenants.yaml)
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
    "slurmtenants.wlm.sylabs.io": {"get", "list", "watch"},  # whose jobs run as whom (tenants.yaml)
}
NEED = {
    (KUBELET, "default"): KUBELET_EVERYWHERE,
    (KUBELET, "kube-node-lease"): {
        **KUBELET_EVERYWHERE,
        # node heartbeats; the cluster Lease (--leader-elect) is taken and renewed with a PUT (update)
        "leases.coordination.k8s.io": {"get", "create", "update", "patch", "delete"},
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


# -- admission: each account's own objects, tried with the account's own token --------------------------

KUBELET_SA = "wlmvk-kubelet"
OPERATOR_SA = "wlmvk-operator"
# A virtual node the kubelet registers here, and a real HPC host whose name looks like one:
# names are never what makes a node wlmvk's, the label given at creation is.
VIRTUAL = "slurm-access-debug"
LOOKALIKE = "slurm-hpc-01"
OTHER = "interlink-access"


def tried(kube: RealKube, account: str, *args: str, body: dict[str, object] | None = None) -> str:
    """A write as the account, server-side dry run: nothing changes whatever the answer."""
    return as_account(kube, account, *args, "--dry-run=server", body=body)


def node(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def lease(name: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name},
    }


def pod(name: str, node_name: str | None, **metadata: object) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "busybox"}]}
    # Unbound pods stay unbound: no scheduler by that name.
    spec.update({"nodeName": node_name} if node_name else {"schedulerName": "nobody"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **metadata},
        "spec": spec,
    }


def denied(policy: str, message: str, binding: str = "") -> str:
    return (
        f"ValidatingAdmissionPolicy '{policy}' with binding '{binding or policy}' denied request: {message}"
    )


AT_CREATION = (
    "the label type=virtual-kubelet is given to a node only when it is created, and never removed: "
    "it marks the nodes wlmvk-kubelet registered"
)
NOT_REGISTERED = (
    "wlmvk-kubelet may change only the nodes it registered (created with the labels type=virtual-kubelet "
    "and wlm.sylabs.io/cluster)"
)
OURS = {"type": "virtual-kubelet", "wlm.sylabs.io/cluster": "access"}
"""The labels every node wlmvk-kubelet registers carries (kubelet/node/nodes.labels), among others."""
UNBOUND = "wlmvk-kubelet may change only pods bound to a node it registered"


def pods_of(name: str) -> str:
    return f"wlmvk-kubelet may not change the pods of node {name}: it did not register it"


def lease_of(name: str) -> str:
    return f"wlmvk-kubelet may not hold the Lease of node {name}: it did not register it"


@pytest.fixture
def virtual_node(real_kube: RealKube) -> Iterator[str]:
    """A virtual node registered by the kubelet's account itself, as its node controller does."""
    assert as_account(real_kube, KUBELET_SA, "create", body=node(VIRTUAL, **OURS)) == ""
    yield VIRTUAL
    real_kube.run_kubectl("delete", "node", VIRTUAL, "--ignore-not-found")


@pytest.fixture
def other_providers_node(real_kube: RealKube) -> Iterator[str]:
    """Another virtual-kubelet provider's node (interLink, Liqo): type=virtual-kubelet, no more."""
    real_kube.must("create", "-f", "-", input=json.dumps(node(OTHER, type="virtual-kubelet")))
    yield OTHER
    real_kube.run_kubectl("delete", "node", OTHER, "--ignore-not-found")


@pytest.fixture
def lookalike_node(real_kube: RealKube) -> Iterator[str]:
    """A real node (created without the label) named like a virtual one."""
    real_kube.must("create", "-f", "-", input=json.dumps(node(LOOKALIKE)))
    yield LOOKALIKE
    real_kube.run_kubectl("delete", "node", LOOKALIKE, "--ignore-not-found")


def test_no_one_turns_a_real_node_into_a_virtual_one(
    real_kube: RealKube, real_agent_node: str, virtual_node: str
) -> None:
    relabel = ("label", "node", real_agent_node, "type=virtual-kubelet", "--overwrite")
    assert denied("wlmvk-kubelet-own-nodes", NOT_REGISTERED) in tried(real_kube, KUBELET_SA, *relabel)
    # Not even the admin: the label is given at creation only.
    refused = real_kube.run_kubectl(*relabel, "--dry-run=server")
    assert denied("wlmvk-virtual-at-creation", AT_CREATION) in refused.stderr
    for change in ("type-", "type=real"):
        refused = real_kube.run_kubectl(
            "label", "node", virtual_node, change, "--overwrite", "--dry-run=server"
        )
        assert denied("wlmvk-virtual-at-creation", AT_CREATION) in refused.stderr


def test_the_kubelet_changes_only_the_nodes_it_registered(
    real_kube: RealKube, real_agent_node: str, lookalike_node: str, other_providers_node: str
) -> None:
    refused = denied("wlmvk-kubelet-own-nodes", NOT_REGISTERED)
    for name in (real_agent_node, lookalike_node, other_providers_node):
        assert refused in tried(real_kube, KUBELET_SA, "annotate", "node", name, "a=b")
        assert refused in tried(real_kube, KUBELET_SA, "label", "node", name, "x=y")
        assert refused in tried(real_kube, KUBELET_SA, "delete", "node", name)
    assert refused in tried(real_kube, KUBELET_SA, "create", body=node("slurm-forged"))
    assert refused in tried(
        real_kube, KUBELET_SA, "create", body=node("slurm-forged", type="virtual-kubelet")
    )
    # Its own node: registered, changed and removed for real.
    assert as_account(real_kube, KUBELET_SA, "create", body=node(VIRTUAL, **OURS)) == ""
    try:
        assert as_account(real_kube, KUBELET_SA, "annotate", "node", VIRTUAL, "a=b") == ""
        assert as_account(real_kube, KUBELET_SA, "label", "node", VIRTUAL, "x=y") == ""
        labels = json.loads(real_kube.must("get", "node", VIRTUAL, "-o", "json"))["metadata"]["labels"]
        assert labels == {**OURS, "x": "y"}
        assert refused in tried(real_kube, KUBELET_SA, "label", "node", VIRTUAL, "type-")
        assert refused in tried(real_kube, KUBELET_SA, "label", "node", VIRTUAL, "wlm.sylabs.io/cluster-")
        assert as_account(real_kube, KUBELET_SA, "delete", "node", VIRTUAL) == ""
        assert real_kube.run_kubectl("get", "node", VIRTUAL).returncode == 1
    finally:
        real_kube.run_kubectl("delete", "node", VIRTUAL, "--ignore-not-found")


def test_the_kubelet_changes_only_pods_bound_to_its_nodes(
    real_kube: RealKube,
    real_agent_node: str,
    lookalike_node: str,
    virtual_node: str,
    other_providers_node: str,
) -> None:
    # Created as admin, then written as the kubelet.
    placed = {
        "on-host": real_agent_node,
        "on-lookalike": lookalike_node,
        "on-other-provider": other_providers_node,
        "on-virtual": virtual_node,
        "unbound": None,
    }
    for name, where in placed.items():
        real_kube.must("create", "-f", "-", input=json.dumps(pod(name, where)))
    try:
        for name, real in (("on-host", real_agent_node), ("on-lookalike", lookalike_node)):
            refused = denied("wlmvk-kubelet-not-on-real-nodes", pods_of(real))
            assert refused in tried(real_kube, KUBELET_SA, "annotate", "pod", name, "a=b")
            assert refused in tried(real_kube, KUBELET_SA, "delete", "pod", name)
        refused = denied(
            "wlmvk-kubelet-not-on-real-nodes",
            pods_of(other_providers_node),
            "wlmvk-kubelet-not-on-other-nodes",
        )
        assert refused in tried(real_kube, KUBELET_SA, "annotate", "pod", "on-other-provider", "a=b")
        assert refused in tried(real_kube, KUBELET_SA, "delete", "pod", "on-other-provider")
        refused = denied("wlmvk-kubelet-bound-pods", UNBOUND)
        assert refused in tried(real_kube, KUBELET_SA, "annotate", "pod", "unbound", "a=b")
        assert refused in tried(real_kube, KUBELET_SA, "delete", "pod", "unbound")
        assert tried(real_kube, KUBELET_SA, "annotate", "pod", "on-virtual", "a=b") == ""
        assert tried(real_kube, KUBELET_SA, "delete", "pod", "on-virtual") == ""
    finally:
        real_kube.run_kubectl("delete", "pod", *placed, "--grace-period=0", "--force")


def test_the_kubelet_holds_no_lease_of_a_real_node(
    real_kube: RealKube,
    real_agent_node: str,
    lookalike_node: str,
    virtual_node: str,
    other_providers_node: str,
) -> None:
    refused = denied(
        "wlmvk-kubelet-own-leases", lease_of(other_providers_node), "wlmvk-kubelet-own-leases-other-nodes"
    )
    assert refused in tried(real_kube, KUBELET_SA, "create", body=lease(other_providers_node))
    for real in (real_agent_node, lookalike_node):
        refused = denied("wlmvk-kubelet-own-leases", lease_of(real))
        assert refused in tried(real_kube, KUBELET_SA, "create", body=lease(real))
    # The agent host's own heartbeat, held by its kubelet: neither renewed nor deleted.
    refused = denied("wlmvk-kubelet-own-leases", lease_of(real_agent_node))
    renew = ("annotate", "lease", "-n", "kube-node-lease", real_agent_node, "a=b")
    assert refused in tried(real_kube, KUBELET_SA, *renew)
    assert refused in tried(
        real_kube, KUBELET_SA, "delete", "lease", "-n", "kube-node-lease", real_agent_node
    )
    assert tried(real_kube, KUBELET_SA, "create", body=lease(virtual_node)) == ""


NOT_ITS_JOB = (
    "wlmvk-operator may create only the pods of its SlurmJobs and WlmJobs (label "
    "app.kubernetes.io/managed-by=wlmvk-operator, controlled by a SlurmJob or WlmJob)"
)
OWNED = {
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


def job_pod(name: str, **spec: object) -> dict[str, object]:
    body = pod(name, None, **OWNED)
    body["spec"] = {
        "nodeSelector": {"type": "virtual-kubelet"},
        "containers": [{"name": "jt1", "image": "no-image"}],
        **spec,
    }
    return body


def test_the_operator_creates_only_the_pods_of_its_jobs(real_kube: RealKube, real_agent_node: str) -> None:
    policy = "wlmvk-operator-own-pods"
    assert denied(policy, NOT_ITS_JOB) in tried(real_kube, OPERATOR_SA, "create", body=pod("sneaky", None))
    assert tried(real_kube, OPERATOR_SA, "create", body=job_pod("job-pod")) == ""
    # Its own kind of pod, but put on a node by hand, or given the host: refused.
    placed = denied(policy, "wlmvk-operator's pods are placed by the scheduler: no spec.nodeName")
    assert placed in tried(real_kube, OPERATOR_SA, "create", body=job_pod("pinned", nodeName=real_agent_node))
    host = denied(policy, "wlmvk-operator's pods are not privileged and share no host namespace")
    root = [{"name": "jt1", "image": "no-image", "securityContext": {"privileged": True}}]
    assert host in tried(real_kube, OPERATOR_SA, "create", body=job_pod("privileged", containers=root))
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        assert host in tried(real_kube, OPERATOR_SA, "create", body=job_pod("host", **{field: True}))
