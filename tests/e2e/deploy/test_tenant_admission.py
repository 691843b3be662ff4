"""Tenancy at admission on the real control plane (manifests/tenancy-admission.yaml, tenants.yaml).

Who may write a SlurmTenant (RBAC: an admin only; the kubelet's and the operator's own tokens
are refused), and what the policy ``wlmvk-tenancy`` refuses before anything is stored: each way
a pod author could run a tenant's work as another account, QoS, partition or user, tried as a
non-admin user (``alice``, allowed to create pods, SlurmJobs and WlmJobs in the tenants'
namespaces), refused with the message naming the SlurmTenant and the value. Where the policy can
say what ``wlmvk.slurm.tenancy`` says, the test asks the pure rule for the expected message: both
sides answer with the same words. Writes are server-side dry runs (admission runs, nothing is
stored) except the pod whose script is changed after it was created.

The in-memory API server stores admission policies but never enforces them: kube_real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.deploy.accounts import as_account
from tests.fixtures.controlplane import RealKube
from wlmvk.operator import directives, pods, resources
from wlmvk.slurm import tenancy

pytestmark = pytest.mark.kube_real

ROOT = Path(__file__).resolve().parents[3]
POLICY = "wlmvk-tenancy"
USER = "alice"  # a tenant's user in Kubernetes: may create work in the namespaces, nothing more
NAMESPACES = ("team-a", "team-b", "team-none")
TAINT = [{"key": "virtual-kubelet.io/provider", "operator": "Equal", "value": "wlm", "effect": "NoSchedule"}]
TENANTS = [
    {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": "physics"},
        "spec": {
            "namespaces": ["team-a"],
            "user": "alice",
            "account": "acct-a",
            "qos": {"default": "normal", "allowed": ["long"]},
            "partitions": [{"cluster": "hpc", "partitions": ["cpu", "gpu_big"]}],
        },
    },
    {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": "chemistry"},
        "spec": {"namespaces": ["team-b"], "user": "bob", "account": "acct-b"},
    },
]
BOOK = tenancy.tenants_from(TENANTS)


def denied(message: str) -> str:
    return f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: {message}"


def as_user(kube: RealKube, namespace: str, body: dict[str, object], *args: str) -> str:
    """``kubectl create`` of ``body`` as ``alice``, server-side dry run: '' when admitted, else why not."""
    done = kube.run_kubectl(
        "create", "-n", namespace, "--as", USER, "--dry-run=server", *args, "-f", "-", input=json.dumps(body)
    )
    return "" if done.returncode == 0 else done.stderr.strip()


def slurm_job(batch: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": "job"},
        "spec": {"batch": batch, **spec},
    }


def wlm_job(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "WlmJob",
        "metadata": {"name": "wlm"},
        "spec": {"image": "library://sylabsed/examples/lolcow", **spec},
    }


def pod(annotations: dict[str, str] | None = None, **spec: object) -> dict[str, object]:
    """A pod for the virtual nodes (it tolerates their taint), left unscheduled (no such scheduler)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": annotations or {}},
        "spec": {
            "schedulerName": "nobody",
            "tolerations": TAINT,
            "containers": [{"name": "c", "image": "busybox"}],
            **spec,
        },
    }


# A job the policy refuses once the tenants are known: how the tests see that it judges.
PROBE = slurm_job("#!/bin/sh\n#SBATCH -A acct-b\ntrue\n")


def wait_for(kube: RealKube, refused: bool) -> None:
    """The policy sees SlurmTenants through an informer: wait until it judges as they now are."""
    deadline = time.monotonic() + 30
    while (as_user(kube, "team-a", PROBE) != "") != refused:
        assert time.monotonic() < deadline, f"the policy did not {'refuse' if refused else 'admit'} in 30 s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def policy(real_kube: RealKube) -> Iterator[RealKube]:
    """The policy installed, the tenants' namespaces, and alice's right to create work in them."""
    kube = real_kube
    kube.must("apply", "-f", str(ROOT / "manifests" / "tenancy-admission.yaml"))
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "tenancy-test-author"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "create", "patch", "delete"]},
            {"apiGroups": ["wlm.sylabs.io"], "resources": ["slurmjobs", "wlmjobs"], "verbs": ["create"]},
        ],
    }
    kube.must("apply", "-f", "-", input=json.dumps(role))
    for namespace in NAMESPACES:  # applied: a run killed before its teardown left them
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "author", "namespace": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "tenancy-test-author",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        }
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        kube.must("apply", "-f", "-", input=json.dumps(ns))
        kube.must("apply", "-f", "-", input=json.dumps(binding))
    for namespace in NAMESPACES:  # pods need their namespace's default ServiceAccount
        deadline = time.monotonic() + 30
        while kube.run_kubectl("get", "serviceaccount", "default", "-n", namespace).returncode != 0:
            assert time.monotonic() < deadline, f"no ServiceAccount default in {namespace}"
            time.sleep(0.2)
    try:
        yield kube
    finally:
        kube.run_kubectl("delete", "slurmtenants", "--all")
        kube.run_kubectl("delete", "namespace", *NAMESPACES, "--timeout=120s")  # gone before a next run
        kube.run_kubectl("delete", "clusterrole", "tenancy-test-author")
        kube.run_kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", POLICY)


@pytest.fixture
def tenants(policy: RealKube) -> Iterator[RealKube]:
    """Tenant physics maps team-a (one account, two QoS, two partitions of cluster hpc); chemistry
    maps team-b (any partition); team-none is mapped by none."""
    policy.must("apply", "-f", "-", input="\n---\n".join(json.dumps(t) for t in TENANTS))
    wait_for(policy, refused=True)
    yield policy
    policy.run_kubectl("delete", "slurmtenants", "--all")


def rule(script: str, namespace: str = "team-a") -> str:
    """What core.tenancy answers for this script (where the job runs not known yet, as here)."""
    decided = tenancy.decide(BOOK, namespace=namespace, cluster=None, partition="", script=script)
    assert isinstance(decided, tenancy.Refusal), decided
    return decided.message


# -- RBAC: only an admin writes the mapping ------------------------------------------------------


def forbidden(user: str, verb: str) -> str:
    named = "" if verb == "create" else ' "physics"'
    return (
        f'slurmtenants.wlm.sylabs.io{named} is forbidden: User "{user}" cannot {verb} resource'
        ' "slurmtenants" in API group "wlm.sylabs.io" at the cluster scope'
    )


def test_only_an_admin_writes_slurmtenants(tenants: RealKube) -> None:
    forged = {**TENANTS[0], "metadata": {"name": "forged"}}
    for account in ("wlmvk-kubelet", "wlmvk-operator"):
        user = f"system:serviceaccount:wlmvk:{account}"
        # It reads them (its component watches them)...
        assert as_account(tenants, account, "get", "slurmtenants") == ""
        assert as_account(tenants, account, "get", "slurmtenant", "physics") == ""
        # ...and writes none, with its own token.
        refused = as_account(tenants, account, "create", "--dry-run=server", body=forged)
        assert (
            f'Error from server (Forbidden): error when creating "STDIN": {forbidden(user, "create")}'
            == refused
        )
        patch = ("patch", "slurmtenant", "physics", "--type=merge", "-p", '{"spec":{"account":"x"}}')
        assert (
            as_account(tenants, account, *patch)
            == f"Error from server (Forbidden): {forbidden(user, 'patch')}"
        )
        delete = ("delete", "slurmtenant", "physics", "--dry-run=server")
        assert (
            as_account(tenants, account, *delete)
            == f"Error from server (Forbidden): {forbidden(user, 'delete')}"
        )
    # Nor does a user who may create work in a tenant's namespace.
    refused = tenants.run_kubectl(
        "create", "--as", USER, "--dry-run=server", "-f", "-", input=json.dumps(forged)
    )
    assert forbidden(USER, "create") in refused.stderr
    # The admin does.
    assert (
        tenants.run_kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(forged)).returncode == 0
    )


# -- SlurmJobs: the batch script's #SBATCH lines -----------------------------------------------------

# Every spelling of every escape; the expected message is the pure rule's own.
SAME_AS_THE_RULE = {
    "account, separate value": "#!/bin/sh\n#SBATCH --account acct-b\ntrue\n",
    "account, =value": "#!/bin/sh\n#SBATCH --account=acct-b\ntrue\n",
    "account, -A value": "#!/bin/sh\n#SBATCH -A acct-b\ntrue\n",
    "account, -Avalue": "#!/bin/sh\n#SBATCH -Aacct-b\ntrue\n",
    "account, bundled after a flag": "#!/bin/sh\n#SBATCH -HA acct-b\ntrue\n",
    "account, quoted after a comment's #": '#!/bin/sh\n#SBATCH --comment="a # b" -A "acct-b"\ntrue\n',
    "account, abbreviated": "#!/bin/sh\n#SBATCH --acc=acct-b\ntrue\n",
    "qos, --qos value": "#!/bin/sh\n#SBATCH --account=acct-a --qos debug\ntrue\n",
    "qos, -qvalue on a later line": "#!/bin/sh\n#SBATCH -q long\n# a comment\n\n#SBATCH -qdebug\ntrue\n",
    "qos, -q=value": "#!/bin/sh\n#SBATCH -q=debug\ntrue\n",
    "uid": "#!/bin/sh\n#SBATCH --uid=0\ntrue\n",
    "uid, separate value": "#!/bin/sh\n#SBATCH --uid root\ntrue\n",
    "uid, -u": "#!/bin/sh\n#SBATCH -u 0\ntrue\n",
    "gid": "#!/bin/sh\n#SBATCH --gid=0\ntrue\n",
    "clusters, -M": "#!/bin/sh\n#SBATCH -M other\ntrue\n",
    "unclosed quote": '#!/bin/sh\n#SBATCH --comment="a -A acct-b\ntrue\n',
}
# The policy cannot know the cluster yet (neither does the operator, which leaves partitions to the
# kubelet): a partition is refused when no cluster of the tenant allows it.
PARTITIONS = {
    "--partition value": ("#SBATCH --partition debug", "--partition=debug (line 2): partition debug"),
    "-pvalue": ("#SBATCH -pdebug", "--partition=debug (line 2): partition debug"),
    "-p list": ("#SBATCH -p cpu,debug", "--partition=cpu,debug (line 2): partition debug"),
    "--partition=value": ("#SBATCH --partition=gpu", "--partition=gpu (line 2): partition gpu"),
}
ANY_CLUSTER = " is not allowed on any cluster (allowed: hpc: cpu, gpu_big)"


@pytest.mark.parametrize("script", list(SAME_AS_THE_RULE.values()), ids=list(SAME_AS_THE_RULE))
def test_a_slurmjob_naming_another_identity_is_refused_as_the_rule_says(
    tenants: RealKube, script: str
) -> None:
    assert denied(rule(script)) in as_user(tenants, "team-a", slurm_job(script))


@pytest.mark.parametrize(("line", "shown"), list(PARTITIONS.values()), ids=list(PARTITIONS))
def test_a_slurmjob_on_a_partition_outside_the_list_is_refused(
    tenants: RealKube, line: str, shown: str
) -> None:
    expected = f"SlurmTenant physics: #SBATCH {shown}{ANY_CLUSTER}"
    assert denied(expected) in as_user(tenants, "team-a", slurm_job(f"#!/bin/sh\n{line}\ntrue\n"))


def test_what_lies_past_the_directives_is_not_judged(tenants: RealKube) -> None:
    # sbatch stops reading #SBATCH at the first command; an indented one is a comment: so does the policy.
    script = "#!/bin/sh\n  #SBATCH -A acct-b\necho hi\n#SBATCH -A acct-b\n"
    assert as_user(tenants, "team-a", slurm_job(script)) == ""


def test_a_job_placed_outside_the_tenants_partitions_is_refused(tenants: RealKube) -> None:
    who = "SlurmTenant physics: nodeSelector"
    cases = {
        "wlm.sylabs.io/partition": (
            {"wlm.sylabs.io/partition": "debug"},
            f"{who} wlm.sylabs.io/partition=debug: partition debug{ANY_CLUSTER}",
        ),
        "partition of cluster": (
            {"wlm.sylabs.io/cluster": "hpc", "wlm.sylabs.io/partition": "debug"},
            f"{who} wlm.sylabs.io/partition=debug: partition debug of cluster hpc is not allowed"
            " (allowed: hpc: cpu, gpu_big)",
        ),
        "another cluster": (
            {"wlm.sylabs.io/cluster": "other"},
            f"{who} wlm.sylabs.io/cluster=other: no partition of cluster other is allowed"
            " (allowed: hpc: cpu, gpu_big)",
        ),
        # The original's own spelling: the node's hostname label, slurm-<cluster>-<partition>.
        "hostname": (
            {"kubernetes.io/hostname": "slurm-hpc-debug"},
            f"{who} kubernetes.io/hostname=slurm-hpc-debug: node slurm-hpc-debug is not the node of an"
            " allowed partition (allowed: slurm-hpc-cpu, slurm-hpc-gpu-big)",
        ),
    }
    for selector, expected in cases.values():
        assert denied(expected) in as_user(
            tenants, "team-a", slurm_job("#!/bin/sh\ntrue\n", nodeSelector=selector)
        )
        assert denied(expected) in as_user(tenants, "team-a", wlm_job(nodeSelector=selector))


# -- pods: wlmvk's annotations, placement, sbatch's environment ----------------------------------------


def test_a_pod_escaping_its_tenant_is_refused(tenants: RealKube) -> None:
    who = "SlurmTenant physics"
    allowed_nodes = "(allowed: slurm-hpc-cpu, slurm-hpc-gpu-big)"
    script = "#!/bin/sh\n#SBATCH --qos=debug\ntrue\n"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "wlm.sylabs.io/partition", "operator": "In", "values": ["cpu", "debug"]}
                        ]
                    }
                ]
            }
        }
    }
    env = [{"name": "c", "image": "busybox", "env": [{"name": "SBATCH_ACCOUNT", "value": "acct-b"}]}]
    cases = [
        (pod({"wlm.sylabs.io/batch": script}), rule(script)),
        (
            pod(nodeSelector={"wlm.sylabs.io/partition": "debug"}),
            f"{who}: nodeSelector wlm.sylabs.io/partition=debug: partition debug{ANY_CLUSTER}",
        ),
        (
            pod(nodeSelector={"kubernetes.io/hostname": "slurm-hpc-debug"}),
            f"{who}: nodeSelector kubernetes.io/hostname=slurm-hpc-debug: node slurm-hpc-debug is not the"
            f" node of an allowed partition {allowed_nodes}",
        ),
        (
            pod(nodeName="slurm-hpc-debug"),
            f"{who}: spec.nodeName=slurm-hpc-debug: node slurm-hpc-debug is not the node of an allowed"
            f" partition {allowed_nodes}",
        ),
        (
            pod(affinity=affinity),
            f"{who}: node affinity wlm.sylabs.io/partition In [cpu, debug]: partition debug{ANY_CLUSTER}",
        ),
        (pod(containers=env), f"{who}: environment variable SBATCH_ACCOUNT would choose the job's account"),
    ]
    for body, expected in cases:
        assert denied(expected) in as_user(tenants, "team-a", body)


def test_a_pods_script_changed_after_creation_is_refused(tenants: RealKube) -> None:
    ok = "#!/bin/sh\n#SBATCH -A acct-a\ntrue\n"
    created = tenants.run_kubectl(
        "create", "-n", "team-a", "--as", USER, "-f", "-", input=json.dumps(pod({"wlm.sylabs.io/batch": ok}))
    )
    assert created.returncode == 0, created.stderr
    try:
        bad = "#!/bin/sh\n#SBATCH -A acct-b\ntrue\n"
        changed = tenants.run_kubectl(
            "annotate", "pod", "p", "-n", "team-a", "--as", USER, "--overwrite", f"wlm.sylabs.io/batch={bad}"
        )
        assert denied(rule(bad)) in changed.stderr
        # Other writes to the pod (the kubelet's job id, a user's label) are not judged again.
        other = tenants.run_kubectl(
            "annotate", "pod", "p", "-n", "team-a", "--as", USER, "wlm.sylabs.io/job-id=7"
        )
        assert other.returncode == 0, other.stderr
    finally:
        tenants.run_kubectl("delete", "pod", "p", "-n", "team-a", "--force", "--grace-period=0")


# -- what is admitted -----------------------------------------------------------------------------------


def test_work_within_its_tenant_is_admitted(tenants: RealKube) -> None:
    within = (
        "#!/bin/sh\n#SBATCH --account=acct-a -q long --partition=gpu_big\n#SBATCH -pcpu --qos normal\ntrue\n"
    )
    assert (
        as_user(
            tenants, "team-a", slurm_job(within, nodeSelector={"kubernetes.io/hostname": "slurm-hpc-gpu-big"})
        )
        == ""
    )
    assert as_user(tenants, "team-a", wlm_job(nodeSelector={"wlm.sylabs.io/partition": "cpu"})) == ""
    placed = {"wlm.sylabs.io/cluster": "hpc", "wlm.sylabs.io/partition": "gpu_big"}
    assert as_user(tenants, "team-a", pod({"wlm.sylabs.io/batch": within}, nodeSelector=placed)) == ""
    assert as_user(tenants, "team-a", pod(nodeName="slurm-hpc-cpu")) == ""
    # A pod that cannot reach a virtual node (no toleration of their taint) is not wlmvk's to judge.
    plain = pod(nodeSelector={"kubernetes.io/hostname": "slurm-hpc-debug"})
    plain["spec"]["tolerations"] = []  # type: ignore[index]
    assert as_user(tenants, "team-a", plain) == ""
    # Tenant chemistry lists no partitions (all allowed) and its own account only.
    assert as_user(tenants, "team-b", slurm_job("#!/bin/sh\n#SBATCH -A acct-b -p anything\ntrue\n")) == ""
    physics = "#!/bin/sh\n#SBATCH -A acct-a\ntrue\n"  # team-a's account, not team-b's
    assert denied(rule(physics, "team-b")) in as_user(tenants, "team-b", slurm_job(physics))
    # A namespace no tenant maps: a policy sees one SlurmTenant at a time and cannot tell that none
    # maps it, so admission lets it through; the operator and the kubelet refuse it
    # (docs/tenancy-admission.md).
    assert as_user(tenants, "team-none", slurm_job("#!/bin/sh\n#SBATCH -A acct-b\ntrue\n")) == ""


def test_a_long_script_is_read_to_its_last_directive_within_the_cost_budget(tenants: RealKube) -> None:
    # 2,000 directive lines and a 160 KB body: the policy reads them all (an expression that ran out
    # of budget would refuse every such job, failurePolicy Fail).
    head = "#!/bin/sh\n" + "".join(f"#SBATCH --comment=c{i} --nodes=1 -A acct-a\n" for i in range(2000))
    body = "echo x\n" * 20000
    assert as_user(tenants, "team-a", slurm_job(head + body)) == ""
    last = head + "#SBATCH -A acct-b\n" + body
    assert denied(rule(last)) in as_user(tenants, "team-a", slurm_job(last))
    assert "(line 2002)" in rule(last)


def test_the_operators_job_pod_of_an_admitted_job_is_admitted(tenants: RealKube) -> None:
    """The pod the operator makes of a SlurmJob (its script, placement and affinity), created with
    the operator's own token: the policy admits the pods of work it admitted, and only those."""

    def job_pod(script: str) -> dict[str, object]:
        body = slurm_job(script)
        body["metadata"] = {
            "name": "job",
            "namespace": "team-a",
            "uid": "3c1c0c4e-0000-4000-8000-000000000002",
        }
        job = resources.parse(body)
        pinned = {"kubernetes.io/hostname": "slurm-hpc-cpu"}
        return pods.job_pod(job, directives.requirements(script), working_dir="/w", pinned=pinned)

    within = "#!/bin/sh\n#SBATCH -A acct-a -p cpu,gpu_big\ntrue\n"
    assert (
        as_account(
            tenants, "wlmvk-operator", "create", "-n", "team-a", "--dry-run=server", body=job_pod(within)
        )
        == ""
    )
    outside = "#!/bin/sh\n#SBATCH -A acct-a -p debug\ntrue\n"
    refused = as_account(
        tenants, "wlmvk-operator", "create", "-n", "team-a", "--dry-run=server", body=job_pod(outside)
    )
    # Placement is judged first: the affinity the operator derived from the script's -p.
    affinity = "node affinity wlm.sylabs.io/partition In [debug]"
    assert denied(f"SlurmTenant physics: {affinity}: partition debug{ANY_CLUSTER}") in refused


def test_with_no_slurmtenant_the_original_example_is_admitted_unchanged(policy: RealKube) -> None:
    policy.must("apply", "-f", "-", input="\n---\n".join(json.dumps(t) for t in TENANTS))
    wait_for(policy, refused=True)  # the policy is judging...
    policy.must("delete", "slurmtenants", "--all")
    wait_for(policy, refused=False)  # ...and with no SlurmTenant left, admits what it refused
    example = yaml.safe_load((ROOT / "examples" / "prepare-and-results.yaml").read_text())
    # As the README's user (the admin, in namespace default), and as alice in a namespace of her own.
    admitted = policy.run_kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(example))
    assert admitted.stdout == "slurmjob.wlm.sylabs.io/prepare-and-results created (server dry run)\n"
    assert as_user(policy, "team-a", example) == ""
